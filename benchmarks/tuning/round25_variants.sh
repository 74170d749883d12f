# round 25 (seventh landing): reward and exploration with PPO-ptx, from the seventh landing's SFT team: rollouts at
# temperature 1.0, a pass-heavy reward (tests 0.3, passed 0.5), Dr. GRPO's loss (no std scaling), two seeds each.
# Same evaluation as rounds 23-24 (2000 test problems x 1, CRN).
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.num_programs=2 grpo.problems_per_step=16 grpo.max_steps=100"
gvar t10_s0 $C grpo.temperature=1.0 seed=0
gvar t10_s1 $C grpo.temperature=1.0 seed=1
gvar passw_s0 $C grpo.coder_reward.tests=0.3 grpo.coder_reward.passed=0.5 seed=0
gvar passw_s1 $C grpo.coder_reward.tests=0.3 grpo.coder_reward.passed=0.5 seed=1
gvar drgrpo_s0 $C grpo.loss_type=dr_grpo grpo.scale_rewards=none seed=0
gvar drgrpo_s1 $C grpo.loss_type=dr_grpo grpo.scale_rewards=none seed=1
