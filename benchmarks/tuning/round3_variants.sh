pvar P_1950lr1 sft.planner.completion_only_loss=false sft.planner.max_steps=1950 sft.planner.learning_rate=0.001
pvar P_2300lr15 sft.planner.completion_only_loss=false sft.planner.max_steps=2300 sft.planner.learning_rate=0.0015
cvar C_1000 coder sft.coder.completion_only_loss=false sft.coder.max_steps=1000
BIN="grpo.coder_reward.syntax=0 grpo.coder_reward.runs=0 grpo.coder_reward.tests=0 grpo.coder_reward.passed=1 grpo.planner_reward.plan_format=0"
gvar r0_default
gvar r1_bin $BIN
gvar r2_bin_sbatch $BIN grpo.scale_rewards=batch
gvar r3_bin_lr1e4 $BIN grpo.learning_rate=1e-4
gvar r4_bin_snone_lr1e4 $BIN grpo.scale_rewards=none grpo.learning_rate=1e-4
gvar r5_sbatch grpo.scale_rewards=batch
gvar r6_bin_s160 $BIN grpo.max_steps=160
gvar r7_bin_t1 $BIN grpo.temperature=1.0
svar s0_default
svar s1_bin $BIN
