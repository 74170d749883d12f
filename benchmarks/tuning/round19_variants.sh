# round 19 (sixth landing): round 14/15's strongest recipe (300 steps of team GRPO on the train split, Coder only)
# against the same SFT team on a 2700-problem test split (data.composite.n_test=2700, 1 sample each, CRN), large
# enough to resolve a one-point gain. The CPU runs the same recipe with seed 0 beside it.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=300 grpo.learning_rate=3e-5 grpo.frozen_roles=[planner] grpo.train_problems=data/processed/composite_train.jsonl"
gvar train300_s1 $C seed=1
gvar train300_s2 $C seed=2
gvar train300_s3 $C seed=3
