# round 7: a larger RL budget (400 steps = 1600 problem visits, 2.7 epochs of the rl split), 4 runs at once
C="grpo.frozen_roles=[planner] sandbox.workers=3"
gvar long_coder_2e5 $C grpo.learning_rate=2e-5 grpo.max_steps=400
gvar long_coder_5e5_kl $C grpo.learning_rate=5e-5 grpo.beta=0.05 grpo.max_steps=400
gvar long_joint_1e5 grpo.frozen_roles=[] sandbox.workers=3 grpo.learning_rate=1e-5 grpo.max_steps=400
gvar long_coder_pps8_2e5 $C grpo.problems_per_step=8 grpo.learning_rate=2e-5 grpo.max_steps=200
