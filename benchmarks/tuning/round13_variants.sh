# round 13 (fifth landing): does much more RL move the test split? 300 steps (4800 visits), same evaluation as round 12.
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16"
gvar s300_s0 $C grpo.max_steps=300 grpo.learning_rate=3e-5
gvar s300_s1 $C grpo.max_steps=300 grpo.learning_rate=3e-5 seed=1
gvar kl4_300_s0 $C grpo.max_steps=300 grpo.learning_rate=4e-5 grpo.beta=0.05
