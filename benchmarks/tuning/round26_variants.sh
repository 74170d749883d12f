# round 26 (seventh landing): what a larger RL budget than the make run's buys: the default recipe for 300 steps
# (3x the make run's), three seeds, and with rollouts at temperature 1.0. Same evaluation as rounds 23-25.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=300"
gvar s300_s0 $C seed=0
gvar s300_s1 $C seed=1
gvar s300_s2 $C seed=2
gvar s300_t10_s0 $C grpo.temperature=1.0 seed=0
