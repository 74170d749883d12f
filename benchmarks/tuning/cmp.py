import json, sys
from corecode.evaluation.stats import paired_bootstrap
rd = lambda d: {json.loads(l)["task_id"]: json.loads(l)["pass_at_1"] for l in open(d + "/composite_test.jsonl")}
a, b = rd(sys.argv[1]), rd(sys.argv[2])
r = paired_bootstrap(a, b, 10_000, alternative="greater")
print(f"grpo {sum(a.values())/len(a):.4f} sft {sum(b.values())/len(b):.4f} delta {sum(a.values())/len(a)-sum(b.values())/len(b):+.4f} p_greater {r.p_value:.4f}")
