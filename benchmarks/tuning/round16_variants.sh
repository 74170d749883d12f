# round 16 (sixth landing): the Coder's plan-adherence reward term (grpo.coder_reward.plan_adherence), at the step
# counts the CPU make run can afford (100-200), evaluated as rounds 12-15 (900 test problems x 1, CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.learning_rate=3e-5 grpo.frozen_roles=[planner]"
gvar adh03_100_s0 $C grpo.max_steps=100 grpo.coder_reward.plan_adherence=0.3 seed=0
gvar adh03_100_s1 $C grpo.max_steps=100 grpo.coder_reward.plan_adherence=0.3 seed=1
gvar adh10_100_s0 $C grpo.max_steps=100 grpo.coder_reward.plan_adherence=1.0 seed=0
gvar adh10_100_s1 $C grpo.max_steps=100 grpo.coder_reward.plan_adherence=1.0 seed=1
gvar adh03_200_s0 $C grpo.max_steps=200 grpo.coder_reward.plan_adherence=0.3 seed=0
gvar adh03_train100_s0 $C grpo.max_steps=100 grpo.coder_reward.plan_adherence=0.3 grpo.train_problems=data/processed/composite_train.jsonl seed=0
