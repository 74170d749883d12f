# round 6: seed spread of the default, LoRA at higher learning rates, big batches (rl split, Coder only unless noted)
C="grpo.frozen_roles=[planner]"
gvar s1_default $C seed=1
gvar s2_default $C seed=2
gvar s0_default $C
gvar lora_2e4 $C grpo.lora_r=16 grpo.lora_alpha=32 grpo.learning_rate=2e-4 grpo.max_steps=120
gvar lora_5e4 $C grpo.lora_r=16 grpo.lora_alpha=32 grpo.learning_rate=5e-4 grpo.max_steps=120
gvar lora_1e3 $C grpo.lora_r=16 grpo.lora_alpha=32 grpo.learning_rate=1e-3 grpo.max_steps=120
gvar pps16_1e4 $C grpo.problems_per_step=16 grpo.learning_rate=1e-4 grpo.max_steps=30
gvar pps16_5e5 $C grpo.problems_per_step=16 grpo.learning_rate=5e-5 grpo.max_steps=30
gvar p1x8_pps8_1e4 $C grpo.num_plans=1 grpo.num_programs=8 grpo.problems_per_step=8 grpo.learning_rate=1e-4 grpo.max_steps=40
gvar warm20_1e4 $C grpo.warmup_steps=20 grpo.lr_scheduler_type=cosine grpo.learning_rate=1e-4 grpo.max_steps=100
gvar joint_lora_2e4 grpo.frozen_roles=[] grpo.lora_r=16 grpo.lora_alpha=32 grpo.learning_rate=2e-4 grpo.max_steps=120
gvar lora_5e4_bin $C grpo.lora_r=16 grpo.lora_alpha=32 grpo.learning_rate=5e-4 grpo.max_steps=120 grpo.coder_reward.syntax=0 grpo.coder_reward.runs=0 grpo.coder_reward.tests=0 grpo.coder_reward.passed=1
