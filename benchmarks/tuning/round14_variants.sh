# round 14 (fifth landing): where GRPO's problems come from. RL on the train split (the problems SFT saw, drawn like
# val) instead of the rl split (step sequences no other split uses), and joint Planner + Coder training; 300 steps,
# evaluated as rounds 12-13.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=300 grpo.learning_rate=3e-5"
gvar train300_s0 $C grpo.frozen_roles=[planner] grpo.train_problems=data/processed/composite_train.jsonl
gvar train300_s1 $C grpo.frozen_roles=[planner] grpo.train_problems=data/processed/composite_train.jsonl seed=1
gvar joint300_s0 $C grpo.frozen_roles=[] grpo.num_plans=2 grpo.problems_per_step=8
