# round 23 (seventh landing): the make run's recipe from the seventh landing's SFT team (CPU-trained, logits loss) on
# its own data (2000-problem test build), three seeds, against 4 programs per plan on 8 problems a step (the same 32
# programs a step, so the same CPU cost). Evaluated on that build's 2000 test problems x 1, CRN.
C="grpo.generation_batch_size=32 grpo.num_plans=1 grpo.frozen_roles=[planner] grpo.max_steps=100"
gvar base_s0 $C grpo.problems_per_step=16 grpo.num_programs=2 seed=0
gvar base_s1 $C grpo.problems_per_step=16 grpo.num_programs=2 seed=1
gvar base_s2 $C grpo.problems_per_step=16 grpo.num_programs=2 seed=2
gvar g4p8_s0 $C grpo.problems_per_step=8 grpo.num_programs=4 seed=0
gvar g4p8_s1 $C grpo.problems_per_step=8 grpo.num_programs=4 seed=1
gvar g4p8_s2 $C grpo.problems_per_step=8 grpo.num_programs=4 seed=2
