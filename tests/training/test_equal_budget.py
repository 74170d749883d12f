"""The embedded default gives the baselines the team's GRPO budget: as many optimizer steps, as many programs scored a
step, the same ptx term (issue 18's controls; notebooks/2026-11-27-02-equal-budget-baselines.md)."""

from corecode.config import Params


def test_baselines_get_the_teams_steps_programs_and_ptx_term():
    grpo = Params().grpo
    team, single, magrpo = grpo.team, grpo.single, grpo.magrpo
    programs = team.problems_per_step * team.num_plans * team.num_programs
    assert programs == 32 and team.max_steps == 80
    # single-agent GRPO: one optimizer step per batch of completions
    assert single.gradient_accumulation_steps == 1 and single.batch_size == programs
    assert magrpo.problems_per_step * magrpo.num_generations == programs
    assert single.max_steps == magrpo.max_steps == team.max_steps
    assert single.ptx_coef == magrpo.ptx_coef == team.ptx_coef > 0
    assert single.ptx_batch_size == magrpo.ptx_batch_size == team.ptx_batch_size
    assert set(magrpo.ptx_data) == {"helper", "main"} and team.ptx_data["coder"] == magrpo.ptx_data["main"]
    # the ptx-only control is the team's own section with the RL term zeroed
    assert team.rl_coef == 1.0 and team.ptx_control.coder_output != team.coder_output
