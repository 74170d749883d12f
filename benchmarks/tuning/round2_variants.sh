pvar P_cl0s1950 sft.planner.completion_only_loss=false sft.planner.max_steps=1950
pvar P_cl0s3200 sft.planner.completion_only_loss=false sft.planner.max_steps=3200
pvar P_cl0s2600lr1 sft.planner.completion_only_loss=false sft.planner.max_steps=2600 sft.planner.learning_rate=0.001
cvar C_cl0 coder sft.coder.completion_only_loss=false
cvar C_cl0s1200 coder sft.coder.completion_only_loss=false sft.coder.max_steps=1200
cvar S_cl0 single sft.single.completion_only_loss=false
gvar g0_default
gvar g1_lr1e4 grpo.learning_rate=1e-4
gvar g2_s160 grpo.max_steps=160
gvar g3_lr1e4s160 grpo.learning_rate=1e-4 grpo.max_steps=160
gvar g4_drgrpo_lr1e4 grpo.learning_rate=1e-4 grpo.loss_type=dr_grpo
gvar g5_p8c2 grpo.num_plans=8
