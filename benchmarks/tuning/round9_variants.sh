# round 9: seeds of the candidate make-run budgets (1600-2000 problem visits, rl split, Coder only)
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32 grpo.problems_per_step=8"
P14="grpo.num_plans=1 grpo.num_programs=4"
gvar a250_s0 $C $P14 grpo.max_steps=250 grpo.learning_rate=2e-5
gvar a250_s1 $C $P14 grpo.max_steps=250 grpo.learning_rate=2e-5 seed=1
gvar a250_s2 $C $P14 grpo.max_steps=250 grpo.learning_rate=2e-5 seed=2
gvar kl3_s0 $C $P14 grpo.max_steps=200 grpo.learning_rate=3e-5 grpo.beta=0.05
gvar kl3_s1 $C $P14 grpo.max_steps=200 grpo.learning_rate=3e-5 grpo.beta=0.05 seed=1
gvar kl3_s2 $C $P14 grpo.max_steps=200 grpo.learning_rate=3e-5 grpo.beta=0.05 seed=2
gvar p22_s1 $C grpo.num_plans=2 grpo.num_programs=2 grpo.max_steps=200 grpo.learning_rate=2e-5 seed=1
gvar p22_s2 $C grpo.num_plans=2 grpo.num_programs=2 grpo.max_steps=200 grpo.learning_rate=2e-5 seed=2
gvar kl2_s1 $C $P14 grpo.max_steps=200 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=1
gvar kl2_s2 $C $P14 grpo.max_steps=200 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=2
gvar lr3_s0 $C $P14 grpo.max_steps=200 grpo.learning_rate=3e-5
