# round 17 (sixth landing): more learning per step at the CPU's 100-step budget: larger learning rates with and
# without KL to the SFT Coder, 4 programs per plan, rollouts at the evaluation temperature. Evaluated as round 16.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.max_steps=100"
gvar lr1e4_kl05 $C grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=1e-4 grpo.beta=0.05 seed=0
gvar lr1e4_kl05_s1 $C grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=1e-4 grpo.beta=0.05 seed=1
gvar lr1e4_kl05_adh $C grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=1e-4 grpo.beta=0.05 grpo.coder_reward.plan_adherence=0.3 seed=0
gvar lr6e5 $C grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=6e-5 seed=0
gvar g4_lr5e5 $C grpo.num_programs=4 grpo.problems_per_step=8 grpo.learning_rate=5e-5 seed=0
gvar t04_lr6e5 $C grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=6e-5 grpo.temperature=0.4 seed=0
