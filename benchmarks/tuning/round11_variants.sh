# round 11: shorter KL-regularised runs that fit the CPU make run (1 plan x 2 programs, 16 problems a step)
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16"
gvar kl4_120_s0 $C grpo.max_steps=120 grpo.learning_rate=4e-5 grpo.beta=0.05
gvar kl4_120_s1 $C grpo.max_steps=120 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=1
gvar kl4_120_s2 $C grpo.max_steps=120 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=2
gvar kl5_120_s0 $C grpo.max_steps=120 grpo.learning_rate=5e-5 grpo.beta=0.05
gvar kl5_120_s1 $C grpo.max_steps=120 grpo.learning_rate=5e-5 grpo.beta=0.05 seed=1
gvar kl4_150_s1 $C grpo.max_steps=150 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=1
gvar kl4_150_s2 $C grpo.max_steps=150 grpo.learning_rate=4e-5 grpo.beta=0.05 seed=2
gvar p12_3e5_200_s2 $C grpo.max_steps=200 grpo.learning_rate=3e-5 seed=2
