# round 20 (sixth landing): PPO-ptx (grpo.ptx_coef: the Coder's SFT loss in every GRPO update) at the CPU's 100-step
# budget, to let larger learning rates through without unlearning SFT. Evaluated on 2700 test problems x 1 (CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.num_programs=2 grpo.problems_per_step=16 grpo.frozen_roles=[planner] grpo.max_steps=100"
gvar ptx02_lr3e5 $C grpo.ptx_coef=0.2 grpo.learning_rate=3e-5 seed=0
gvar ptx02_lr6e5 $C grpo.ptx_coef=0.2 grpo.learning_rate=6e-5 seed=0
gvar ptx02_lr6e5_s1 $C grpo.ptx_coef=0.2 grpo.learning_rate=6e-5 seed=1
gvar ptx02_lr1e4 $C grpo.ptx_coef=0.2 grpo.learning_rate=1e-4 seed=0
gvar ptx10_lr1e4 $C grpo.ptx_coef=1.0 grpo.learning_rate=1e-4 seed=0
gvar ptx10_lr6e5_adh $C grpo.ptx_coef=1.0 grpo.learning_rate=6e-5 grpo.coder_reward.plan_adherence=0.3 seed=0
