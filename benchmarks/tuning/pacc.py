import sys, torch, collections
from corecode.evaluation.benchmarks import get_benchmark
from corecode.agents.prompts import planner_prompt
from corecode.agents.extract import extract_plan
from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
gen = TransformersGenerator(sys.argv[1], max_batch_size=128, dtype="float32", device="auto")
for b, n in (("composite_val", 200), ("composite_test", 300)):
    probs = get_benchmark(b)[:n]
    outs = gen.generate([planner_prompt(p) for p in probs], SamplingParams(n=1, max_new_tokens=96, temperature=0))
    by = collections.defaultdict(list)
    for p, o in zip(probs, outs):
        got = (extract_plan(o[0].text).value or "").strip().splitlines(); gold = p.plan.strip().splitlines()
        tags = p.tags; cat = "len" if "ood:length" in tags else "pair" if "ood:pair" in tags else "chain" if "ood:chain" in tags else "in"
        by[cat].append(got == gold)
    tot = sum(sum(v) for v in by.values()) / len(probs)
    print(b, "exact", round(tot, 3), {k: round(sum(v) / len(v), 2) for k, v in sorted(by.items())})
