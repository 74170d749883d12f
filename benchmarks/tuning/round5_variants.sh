# round 5: longer GRPO from the make run's SFT team (rl split, Coder only unless noted)
C="grpo.frozen_roles=[planner]"
gvar a_lr2e5_s200 $C grpo.learning_rate=2e-5 grpo.max_steps=200
gvar b_lr1e5_s200 $C grpo.learning_rate=1e-5 grpo.max_steps=200
gvar c_lr5e6_s200 $C grpo.learning_rate=5e-6 grpo.max_steps=200
gvar d_p1x8_lr2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=200 grpo.num_plans=1 grpo.num_programs=8
gvar e_p2x8_lr1e5 $C grpo.learning_rate=1e-5 grpo.max_steps=200 grpo.num_plans=2 grpo.num_programs=8
gvar f_binary_lr2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=200 grpo.coder_reward.syntax=0 grpo.coder_reward.runs=0 grpo.coder_reward.tests=0 grpo.coder_reward.passed=1
gvar g_dapo_lr2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=200 grpo.loss_type=dapo
gvar h_joint_lr1e5 grpo.frozen_roles=[] grpo.learning_rate=1e-5 grpo.max_steps=200
gvar i_beta02_lr2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=200 grpo.beta=0.02
gvar j_t1_lr2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=200 grpo.temperature=1.0
gvar k_pps8_lr1e5 $C grpo.learning_rate=1e-5 grpo.max_steps=200 grpo.problems_per_step=8
gvar l_lr5e5_s200 $C grpo.learning_rate=5e-5 grpo.max_steps=200
