"""Teams composed in params.yaml, retrieval neighbours, and config errors that name the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from corecode.agents.config import AgentsParams, RoleModel
from corecode.agents.debugging import DebuggingTeam
from corecode.agents.factory import build_team, resolve_role_model
from corecode.agents.retrieval import ProblemIndex, RetrievalTeam, tokenize
from corecode.agents.teams import CoTTeam, HelperMainTeam, PlannerCoderTeam, SingleTeam
from corecode.config import ConfigError, load_params
from corecode.data.schema import Problem

CORPUS = [
    Problem(
        task_id="tr/0",
        source="toy",
        split="train",
        prompt="Reverse the words of a sentence.",
        plan="1. split on spaces\n2. reverse the list\n3. join",
        reference_solution="def f(s): ...",
    ),
    Problem(
        task_id="tr/1",
        source="toy",
        split="train",
        prompt="Count the vowels in a string.",
        plan="1. loop over characters\n2. count those in 'aeiou'",
        reference_solution="def g(s): ...",
    ),
    Problem(
        task_id="tr/2",
        source="toy",
        split="train",
        prompt="Sum the even numbers of a list of integers.",
        plan="1. filter even\n2. sum",
        reference_solution="def h(xs): ...",
    ),
    Problem(
        task_id="tr/3",
        source="toy",
        split="train",
        prompt="Unsolved problem about vowels.",
    ),
]


def write_params(tmp_path, body: str):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_defaults_validate_and_cover_every_type():
    import yaml

    a = AgentsParams()
    dvc = yaml.safe_load((Path(__file__).resolve().parents[2] / "dvc.yaml").read_text())
    assert set(dvc["stages"]["evaluate"]["foreach"]) <= set(a.teams)  # the pipeline evaluates these team names
    assert {s.type for s in a.teams.values()} == {
        "single",
        "single_cot",
        "plan_then_code",
        "planner_coder",
        "helper_main",
        "retrieval",
        "debugging",
    }
    assert a.sampling_for("repair_2").max_new_tokens == a.sampling["repair"].max_new_tokens
    for field in AgentsParams.model_fields.values():
        assert field.description


def test_config_composed_teams(tmp_path, scripted, add_problem, sandbox):
    path = write_params(
        tmp_path,
        """
        agents:
          default_team: mine
          sampling:
            planner: {max_new_tokens: 17, temperature: 0.0}
          teams:
            mine:
              type: planner_coder
              roles: {planner: data/checkpoints/planner, coder: {model: base, adapter: ad/coder}}
              options: {codes_per_plan: 2}
            cot: {type: single_cot, roles: {coder: x}}
            solo: {type: single, roles: {coder: x}}
            hm: {type: helper_main, roles: {helper: x, main: x}, options: {main_sees_helper: false}}
            fix: {type: debugging, options: {inner: solo, max_rounds: 1, visible_k: 1}}
    """,
    )
    params = load_params(path)
    planner = scripted(lambda p, i: "<plan>\n1. add\n</plan>")
    coder = scripted(lambda p, i: "```python\ndef add(a, b):\n    return a + b\n```")
    gens = {"planner": planner, "coder": coder, "helper": coder, "main": coder}
    team = build_team(params.agents.default_team, params, gens)
    assert isinstance(team, PlannerCoderTeam) and team.codes_per_plan == 2 and team.name == "mine"
    (row,) = team.solve([add_problem], n=4)
    assert len(row) == 4 and len(planner.calls[0][0]) == 1 and planner.calls[0][1].n == 2
    assert planner.calls[0][1].max_new_tokens == 17 and planner.calls[0][1].temperature == 0.0
    assert params.agents.teams["mine"].roles["coder"] == RoleModel(model="base", adapter="ad/coder")
    assert isinstance(build_team("cot", params, gens), CoTTeam)
    assert isinstance(build_team("solo", params, gens), SingleTeam)
    hm = build_team("hm", params, gens)
    assert isinstance(hm, HelperMainTeam) and hm.main_sees_helper is False
    fix = build_team("fix", params, gens, sandbox=sandbox)
    assert isinstance(fix, DebuggingTeam) and isinstance(fix.inner, SingleTeam) and fix.max_rounds == 1
    assert fix.generators["repair"] is coder  # no repair model given: the inner coder repairs
    (row,) = fix.solve([add_problem], n=1)
    assert row[0].meta["visible_verdicts"] == ["passed"]


def test_build_team_with_a_loader_callable_shares_nothing_it_was_not_asked_for(tmp_path, scripted):
    params = load_params(
        write_params(
            tmp_path,
            """
        agents:
          teams:
            pc: {type: planner_coder, roles: {planner: models:/planner@champion, coder: c}}
            dbg: {type: debugging, roles: {repair: r}, options: {inner: pc}}
          default_team: pc
    """,
        )
    )
    asked = []

    def factory(role, model):
        asked.append((role, model.model))
        return scripted(lambda p, i: "")

    build_team("dbg", params, factory, sandbox=object())
    assert asked == [("planner", "models:/planner@champion"), ("coder", "c"), ("repair", "r")]


@pytest.mark.parametrize(
    "body,needle",
    [
        ("agents: {teams: {t: {type: planner_coder, roles: {coder: c}}}, default_team: t}", "agents.teams.t"),
        ("agents: {teams: {t: {type: planner_coder, roles: {planner: p, coder: c}}}, default_team: t}\n", None),
        ("agents: {teams: {t: {type: single, roles: {coder: c, planner: p}}}, default_team: t}", "unknown role"),
        (
            "agents: {teams: {t: {type: planner_coder, roles: {planner: p, coder: c}, options: {codes_per_plna: 2}}},"
            " default_team: t}",
            "options.codes_per_plna",
        ),
        ("agents: {teams: {t: {type: debugging, options: {inner: nope}}}, default_team: t}", "options.inner"),
        ("agents: {teams: {t: {type: magic, roles: {}}}, default_team: t}", "agents.teams.t.type"),
        ("agents: {teams: {t: {type: single, roles: {coder: c}}}, default_team: other}", "default_team"),
        ("agents: {sampling: {coder: {temprature: 1}}}", "agents.sampling.coder.temprature"),
    ],
)
def test_config_errors_name_the_key(tmp_path, body, needle):
    path = write_params(tmp_path, body)
    if needle is None:
        load_params(path)
        return
    with pytest.raises(ConfigError) as e:
        load_params(path)
    assert str(path) in str(e.value) and needle in str(e.value), str(e.value)


def test_build_team_unknown_name_and_missing_generator(scripted):
    params = AgentsParams()
    with pytest.raises(KeyError, match="no team named 'nope'"):
        build_team("nope", params, {})
    with pytest.raises(KeyError, match="no generator given for role 'planner'"):
        build_team("planner_coder_sft", params, {"coder": scripted(lambda p, i: "")})


def test_resolve_role_model_passes_paths_through_and_rejects_missing_local_paths(tmp_path):
    assert resolve_role_model(RoleModel(model="org/model", adapter="ad")) == ("org/model", "ad")  # hub id
    assert resolve_role_model(RoleModel(model=str(tmp_path)), "coder") == (str(tmp_path), None)
    with pytest.raises(FileNotFoundError, match=r"data/checkpoints/none: checkpoint for role 'coder' not found"):
        resolve_role_model(RoleModel(model="data/checkpoints/none"), "coder")


# -------------------------------------------------------------------------------------------------------- retrieval


def test_tokenize_splits_identifiers():
    assert tokenize("def count_Vowels(sentenceText): return the n") == ["count", "vowels", "sentence", "text", "n"]


def test_retrieval_finds_the_right_neighbour():
    index = ProblemIndex(CORPUS)
    assert [p.task_id for p in index.problems] == ["tr/0", "tr/1", "tr/2"]  # unsolved ones are not indexed
    q = Problem(task_id="q", source="toy", prompt='def vowels_count(s):\n    """How many vowels does s have?"""')
    hits = index.search(q, k=2)
    assert hits[0][0].task_id == "tr/1" and hits[0][1] > hits[1][1]
    q2 = Problem(task_id="q2", source="toy", prompt="Given a list of integers, add up the even ones (sum).")
    assert index.search(q2, k=1)[0][0].task_id == "tr/2"


def test_retrieval_never_returns_the_problem_itself():
    index = ProblemIndex(CORPUS)
    same_id = CORPUS[1].model_copy(update={"split": "test"})
    assert "tr/1" not in [p.task_id for p, _ in index.search(same_id, k=3)]
    same_text = CORPUS[1].model_copy(update={"task_id": "other"})
    assert "tr/1" not in [p.task_id for p, _ in index.search(same_text, k=3)]


def test_retrieval_team_puts_neighbours_in_the_planner_prompt(scripted, tmp_path):
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("\n".join(p.model_dump_json() for p in CORPUS) + "\n")
    params = AgentsParams.model_validate(
        {
            "teams": {
                "r": {
                    "type": "retrieval",
                    "roles": {"planner": "p", "coder": "c"},
                    "options": {"corpus": str(corpus), "k": 1},
                }
            },
            "default_team": "r",
        }
    )
    planner = scripted(lambda p, i: "<plan>\n1. count\n</plan>")
    coder = scripted(lambda p, i: "```python\ndef vowels_count(s):\n    return 0\n```")
    team = build_team("r", params, {"planner": planner, "coder": coder})
    assert isinstance(team, RetrievalTeam)
    q = Problem(
        task_id="q",
        source="toy",
        prompt='def vowels_count(s):\n    """Count vowels in s."""',
        entry_point="vowels_count",
    )
    (row,) = team.solve([q], n=1)
    prompt = planner.prompts[0]
    assert prompt.startswith("### Example problem\nCount the vowels in a string.")
    assert "### Example plan\n<plan>\n1. loop over characters" in prompt and "def g(s)" in prompt
    assert prompt.endswith("### Problem\n" + q.prompt + "\n### Plan\n")
    assert row[0].meta["retrieved"] == ["tr/1"] and row[0].plan == "1. count"
