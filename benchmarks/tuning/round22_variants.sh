# round 22 (sixth landing): more seeds of round 21's best (ptx 2.0, lr 2e-4) and a step further (ptx 3.0, lr 3e-4),
# before choosing the make-run default. Evaluated as round 20 (2700 test problems x 1, CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.frozen_roles=[planner] grpo.max_steps=100"
gvar ptx20_lr2e4_s1 $C grpo.ptx_coef=2.0 grpo.learning_rate=2e-4 seed=1
gvar ptx20_lr2e4_s2 $C grpo.ptx_coef=2.0 grpo.learning_rate=2e-4 seed=2
gvar ptx20_lr2e4_s3 $C grpo.ptx_coef=2.0 grpo.learning_rate=2e-4 seed=3
gvar ptx20_lr2e4_adh $C grpo.ptx_coef=2.0 grpo.learning_rate=2e-4 grpo.coder_reward.plan_adherence=0.3 seed=0
gvar ptx30_lr3e4 $C grpo.ptx_coef=3.0 grpo.learning_rate=3e-4 seed=0
gvar ptx30_lr3e4_s1 $C grpo.ptx_coef=3.0 grpo.learning_rate=3e-4 seed=1
