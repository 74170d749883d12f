# round 15 (fifth landing): more seeds of round 14's GRPO on the train split (300 steps), evaluated as rounds 12-14.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=300 grpo.learning_rate=3e-5 grpo.frozen_roles=[planner] grpo.train_problems=data/processed/composite_train.jsonl"
gvar train300_s2 $C seed=2
gvar train300_s3 $C seed=3
gvar train300_s4 $C seed=4
