RL=grpo.train_problems=data/processed/composite_rl.jsonl
gvar v0_train
gvar v1_rl $RL
gvar v2_rl_planneronly $RL grpo.frozen_roles=[coder]
gvar v3_rl_coderonly $RL grpo.frozen_roles=[planner]
gvar v4_train_planneronly grpo.frozen_roles=[coder]
gvar v5_rl_pps8_s40 $RL grpo.problems_per_step=8 grpo.max_steps=40
gvar v6_rl_beta05 $RL grpo.beta=0.05
gvar v7_rl_t1 $RL grpo.temperature=1.0
gvar v8_rl_planneronly_t1 $RL grpo.frozen_roles=[coder] grpo.temperature=1.0
svar s_rl grpo.single.train_problems=data/processed/composite_rl.jsonl
