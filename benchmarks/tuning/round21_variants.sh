# round 21 (sixth landing): round 20's strongest PPO-ptx settings with more seeds, and stronger ptx with larger
# learning rates. Evaluated as round 20 (2700 test problems x 1, CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.frozen_roles=[planner] grpo.max_steps=100"
gvar ptx10_lr1e4_s1 $C grpo.ptx_coef=1.0 grpo.learning_rate=1e-4 seed=1
gvar ptx10_lr1e4_s2 $C grpo.ptx_coef=1.0 grpo.learning_rate=1e-4 seed=2
gvar ptx10_lr1e4_adh $C grpo.ptx_coef=1.0 grpo.learning_rate=1e-4 grpo.coder_reward.plan_adherence=0.3 seed=0
gvar ptx10_lr2e4 $C grpo.ptx_coef=1.0 grpo.learning_rate=2e-4 seed=0
gvar ptx20_lr2e4 $C grpo.ptx_coef=2.0 grpo.learning_rate=2e-4 seed=0
gvar ptx20_lr1e4 $C grpo.ptx_coef=2.0 grpo.learning_rate=1e-4 seed=0
