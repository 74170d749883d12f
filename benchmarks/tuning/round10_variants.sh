# round 10: twice the problem visits for the same programs (1 plan x 2 programs, 16 problems a step), more seeds
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32"
P12="grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=200"
P14="grpo.num_plans=1 grpo.num_programs=4 grpo.problems_per_step=8 grpo.max_steps=200"
gvar p12_2e5_s0 $C $P12 grpo.learning_rate=2e-5
gvar p12_2e5_s1 $C $P12 grpo.learning_rate=2e-5 seed=1
gvar p12_2e5_s2 $C $P12 grpo.learning_rate=2e-5 seed=2
gvar p12_3e5_s0 $C $P12 grpo.learning_rate=3e-5
gvar p12_3e5_s1 $C $P12 grpo.learning_rate=3e-5 seed=1
gvar p14_2e5_s3 $C $P14 grpo.learning_rate=2e-5 seed=3
gvar p14_2e5_s4 $C $P14 grpo.learning_rate=2e-5 seed=4
gvar p12_4e5_kl_s0 $C $P12 grpo.learning_rate=4e-5 grpo.beta=0.05
