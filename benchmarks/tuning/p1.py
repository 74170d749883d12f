import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))["benchmarks"]["composite_test"]
print("pass@1", round(s["pass_at_1"], 4), "gain", s.get("collaboration_gain"))
