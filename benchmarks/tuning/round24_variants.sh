# round 24 (seventh landing): more RL per run from the seventh landing's SFT team: 150 steps (three seeds), 24 problems
# a step, and round 22's ptx 3.0 / lr 3e-4. Same evaluation as round 23 (2000 test problems x 1, CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.num_programs=2"
gvar s150_s0 $C grpo.problems_per_step=16 grpo.max_steps=150 seed=0
gvar s150_s1 $C grpo.problems_per_step=16 grpo.max_steps=150 seed=1
gvar s150_s2 $C grpo.problems_per_step=16 grpo.max_steps=150 seed=2
gvar p24_s0 $C grpo.problems_per_step=24 grpo.max_steps=100 seed=0
gvar p24_s1 $C grpo.problems_per_step=24 grpo.max_steps=100 seed=1
gvar ptx3_lr3e4_s2 $C grpo.problems_per_step=16 grpo.max_steps=100 grpo.ptx_coef=3.0 grpo.learning_rate=3e-4 seed=2
