# round 27 (seventh landing): between the make run's 100 steps and round 26's 300: 200 steps (three seeds) and 250
# steps (two seeds) of the default recipe. Same evaluation as rounds 23-26.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.num_programs=2 grpo.problems_per_step=16"
gvar s200_s0 $C grpo.max_steps=200 seed=0
gvar s200_s1 $C grpo.max_steps=200 seed=1
gvar s200_s2 $C grpo.max_steps=200 seed=2
gvar s250_s0 $C grpo.max_steps=250 seed=0
gvar s250_s1 $C grpo.max_steps=250 seed=1
