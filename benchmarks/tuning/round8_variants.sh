# round 8: RL budgets the CPU make run can afford (1 plan x 4 programs per problem visit), seeds (rl split, Coder only)
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32"
P14="grpo.num_plans=1 grpo.num_programs=4 grpo.problems_per_step=8"
gvar a_p14_s200_2e5 $C $P14 grpo.max_steps=200 grpo.learning_rate=2e-5
gvar b_p14_s200_4e5 $C $P14 grpo.max_steps=200 grpo.learning_rate=4e-5
gvar c_p14_pps16_s100_4e5 $C grpo.num_plans=1 grpo.num_programs=4 grpo.problems_per_step=16 grpo.max_steps=100 grpo.learning_rate=4e-5
gvar d_p22_s200_2e5 $C grpo.num_plans=2 grpo.num_programs=2 grpo.problems_per_step=8 grpo.max_steps=200 grpo.learning_rate=2e-5
gvar e_p14_s200_2e5_seed1 $C $P14 grpo.max_steps=200 grpo.learning_rate=2e-5 seed=1
gvar f_p14_s200_2e5_seed2 $C $P14 grpo.max_steps=200 grpo.learning_rate=2e-5 seed=2
gvar g_p14_s300_2e5 $C $P14 grpo.max_steps=300 grpo.learning_rate=2e-5
gvar h_p14_s150_3e5 $C $P14 grpo.max_steps=150 grpo.learning_rate=3e-5
gvar i_p14_s200_4e5_kl $C $P14 grpo.max_steps=200 grpo.learning_rate=4e-5 grpo.beta=0.05
gvar j_p42_pps8_s200_seed1 $C grpo.problems_per_step=8 grpo.max_steps=200 grpo.learning_rate=2e-5 seed=1
