#!/usr/bin/env python3
"""bench/trainer_summary.py SCRATCH STEP_CPP.json STEP_TORCH.json — the table of
bench/trainer_stages.sh: per stage (init, sft, selfsup, crl) the answers its model gave in the
same measuring round (first-round prompts, then contrastive ones), how many were accepted, and the mean raw reward (eager speedup when
accepted, 0 on failure, -1 on a caught hack); then each RL stage's rounds from its log; then the
training step's time in C++ and in PyTorch."""
import json
import os
import sys


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def exemplars_shown(samples):
    """The mean number of earlier files the samples' prompts showed."""
    return sum(len(r.get("exemplars") or []) for r in samples) / len(samples)


def main():
    scratch, cpp, torch_json = sys.argv[1:4]
    print("| stage | prompts | answers | exemplars shown | prompt tokens | accepted | correct rate | mean raw reward | best speedup per task |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    unshown = []
    for stage, prompts in [(s, p) for p in ["first-round", "contrastive"] for s in ["init", "sft", "selfsup", "crl"]]:
        folder = f"eval_{stage}" if prompts == "first-round" else f"eval_contrastive_{stage}"
        rows = lines(os.path.join(scratch, folder, "samples.jsonl"))
        if not rows:
            print(f"| {stage} | {prompts} | not run | | | | | | |")
            continue
        ok = [r for r in rows if r["verdict"]["accepted"]]
        best = {}
        for r in ok:
            s = r["verdict"]["speedup"] or 0
            best[r["task"]] = max(best.get(r["task"], 0), s)
        mean = sum(r["raw_reward"] for r in rows) / len(rows)
        bests = ", ".join(f"{t.split('/')[-1]} {s:.2f}x" for t, s in sorted(best.items())) or "-"
        shown = exemplars_shown(rows)
        tokens = sum((r.get("tokens") or {}).get("prompt", 0) for r in rows) / len(rows)
        if prompts == "contrastive" and shown == 0:
            unshown.append(stage)
        print(f"| {stage} | {prompts} | {len(rows)} | {shown:.1f} | {tokens:.0f} | {len(ok)} | "
              f"{100 * len(ok) / len(rows):.0f}% | {mean:.3f} | {bests} |")
    if unshown:
        print(f"\nNOT CONTRASTIVE: the contrastive rounds of {', '.join(unshown)} showed no earlier file (their store had "
              "none it could trust): those rows are first-round figures.")
    print()
    for stage in ["sft", "selfsup", "crl"]:
        log = lines(os.path.join(scratch, stage, "train_log.jsonl"))
        if not log:
            continue
        if stage == "sft":
            line = f"sft: {len(log)} steps, loss {log[0]['loss']:.3f} -> {log[-1]['loss']:.3f}"
            for got in [g for g in lines(os.path.join(scratch, "sft_summary.json")) if "examples" in g][-1:]:
                line += (f"; {got['examples']} examples ({got['contrastive']} contrastive), left out: {got['too_long']} too long, "
                         f"{got.get('answer_too_long', 0)} with answers longer than the sampling limit")
            print(line)
            continue
        # What each round's prompts showed and how its answers failed, from the stage's own samples.
        samples = lines(os.path.join(scratch, stage, "loop", "samples.jsonl"))
        parts = []
        for r in log:
            extra = f" kl {r['kl']:.4f}" if "kl" in r else ""
            mine = [x for x in samples if x.get("round") == r["round"]]
            if mine:
                shown = exemplars_shown(mine)
                cut = sum(1 for x in mine if (x.get("verdict") or {}).get("outcome") == "truncated")
                extra += f" (exemplars {shown:.1f}, {cut}/{len(mine)} cut off)"
            parts.append(f"r{r['round']}: {100 * r['correct_rate']:.0f}% reward {r['raw_reward_mean']:.3f}{extra}")
        print(f"{stage}: " + "; ".join(parts))
    print()
    steps = {}
    for name, path in [("C++ (libtorch)", cpp), ("PyTorch (Python)", torch_json)]:
        got = lines(path)
        if got:
            steps[name] = got[-1]
    if steps:
        print("| training step | torch | attention | ms median | ms mean | tokens/s | first loss | last loss |")
        print("|---|---|---|---:|---:|---:|---:|---:|")
        for name, j in steps.items():
            print(f"| {name} | {j.get('torch_version', '-')} | {j.get('attention', '-')} | {j.get('median_ms', 0):.2f} | "
                  f"{j.get('mean_ms', 0):.2f} | {j.get('tokens_per_s', 0):.0f} | {j.get('first_loss', 0):.5f} | {j.get('last_loss', 0):.5f} |")
        if len(steps) == 2:
            a, b = list(steps.values())
            if a.get("median_ms"):
                print(f"\nPython / C++ median step time: {b.get('median_ms', 0) / a['median_ms']:.2f}x "
                      f"({a.get('batch')}x{a.get('seq')} tokens, {a.get('dtype')}, {a.get('mode')})")


if __name__ == "__main__":
    main()
