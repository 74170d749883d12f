# round 12 (fifth landing): CPU-affordable recipes, evaluated the new way: 900 test problems x 1 sample, common random
# numbers (EXTRA_G="--set generation.fast_path=lean --set evaluate.n_samples=1 --set evaluate.ks=[1]").
C="grpo.frozen_roles=[planner] grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16"
gvar s100_s0 $C grpo.max_steps=100 grpo.learning_rate=3e-5
gvar s100_s1 $C grpo.max_steps=100 grpo.learning_rate=3e-5 seed=1
gvar s150_s0 $C grpo.max_steps=150 grpo.learning_rate=3e-5
gvar s150_s1 $C grpo.max_steps=150 grpo.learning_rate=3e-5 seed=1
gvar s200_s0 $C grpo.max_steps=200 grpo.learning_rate=3e-5
gvar s200_s1 $C grpo.max_steps=200 grpo.learning_rate=3e-5 seed=1
gvar mu2_100_s0 $C grpo.max_steps=100 grpo.learning_rate=3e-5 grpo.num_iterations=2
gvar mu2_100_s1 $C grpo.max_steps=100 grpo.learning_rate=3e-5 grpo.num_iterations=2 seed=1
gvar lr4_150_s0 $C grpo.max_steps=150 grpo.learning_rate=4e-5
gvar lr5_100_s0 $C grpo.max_steps=100 grpo.learning_rate=5e-5
gvar kl5_120_s0 $C grpo.max_steps=120 grpo.learning_rate=5e-5 grpo.beta=0.05
