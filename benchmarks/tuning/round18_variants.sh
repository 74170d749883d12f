# round 18 (sixth landing): cleaner learning signals at the CPU's 100-step budget, with the plan-adherence term:
# advantages scaled by the batch's std (reward gaps count) instead of each pair's, rollouts at the evaluation's
# temperature, a pass-heavy reward, and another seed of round 16's adherence run. Evaluated as round 16.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.frozen_roles=[planner] grpo.max_steps=100 grpo.coder_reward.plan_adherence=0.3"
gvar adh03_s2 $C grpo.learning_rate=3e-5 seed=2
gvar adh03_batchstd $C grpo.learning_rate=3e-5 grpo.scale_rewards=batch seed=0
gvar adh03_t04_lr4e5 $C grpo.learning_rate=4e-5 grpo.temperature=0.4 seed=0
gvar adh03_t04_lr4e5_s1 $C grpo.learning_rate=4e-5 grpo.temperature=0.4 seed=1
gvar adh03_passheavy $C grpo.learning_rate=3e-5 grpo.coder_reward.tests=0.2 grpo.coder_reward.passed=0.6 seed=0
gvar adh03_t04_train $C grpo.learning_rate=4e-5 grpo.temperature=0.4 grpo.train_problems=data/processed/composite_train.jsonl seed=0
