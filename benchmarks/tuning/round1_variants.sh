E=model.embedded
variant A_base -- &
variant B_cl0 -- sft.planner.completion_only_loss=false &
variant C_lr3 -- sft.planner.learning_rate=0.003 &
variant D_lr1 -- sft.planner.learning_rate=0.001 &
variant E_s2600 -- sft.planner.max_steps=2600 &
variant F_deep8x128 $E.hidden_size=128 $E.num_hidden_layers=8 $E.num_attention_heads=4 $E.intermediate_size=344 -- &
variant G_wide3x256 $E.hidden_size=256 $E.num_hidden_layers=3 $E.num_attention_heads=8 $E.intermediate_size=688 -- &
variant H_bs4s2600 -- sft.planner.batch_size=4 sft.planner.max_steps=2600 &
variant I_voc4096 $E.vocab_size=4096 -- &
variant J_cl0s2600 -- sft.planner.completion_only_loss=false sft.planner.max_steps=2600 &
variant K_cl0lr3 -- sft.planner.completion_only_loss=false sft.planner.learning_rate=0.003 &
variant L_deep6x192 $E.num_hidden_layers=6 -- &
