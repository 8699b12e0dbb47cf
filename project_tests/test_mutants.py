"""Every hidden test can fail: each fails on at least one small mutation of the solution,
and each mutation (hard-coded textbook outputs among them) loses points.

The mutants are the misconception catalog, ``tests/<assignment>/catalog/<stem>.toml``: each
``Mistake`` is a text replacement on the solution. Every mistake that names a concept must
also be diagnosed with exactly that concept (confirmed by the catalog itself).
"""

from __future__ import annotations

import tomllib

import pytest

from grader.diagnosis import catalog
from grader import rubric as rubrics
from project_tests.helpers import ROOT, assignments, exercise, grade_many, make_submission, mutate, solution_sources


def mutants_of(assignment: str) -> dict[str, list[tuple[str, str, str]]]:
    """The catalog's mistakes of every module of ``assignment``, by stem: (description, old, new)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for mistake in catalog.load(ROOT / "tests" / assignment):
        found.setdefault(mistake.stem, []).append((mistake.description, mistake.old, mistake.new))
    return found


def concept_of(assignment: str, stem: str, description: str) -> str:
    """The concept the catalog gives the mistake ``description`` of ``stem``."""
    return next(m.concept for m in catalog.load(ROOT / "tests" / assignment)
                if m.stem == stem and m.description == description)


@pytest.fixture(scope="module", params=assignments())
def graded_mutants(request, tmp_path_factory):
    """Grade every mutant of one assignment in one run; reports by (stem, description)."""
    assignment = request.param
    base = tmp_path_factory.mktemp(f"mutants-{assignment}")
    solutions = solution_sources(assignment)
    roots = {}
    for stem, mutants in mutants_of(assignment).items():
        for number, (description, old, new) in enumerate(mutants):
            source = mutate(solutions[stem], old, new)
            roots[(stem, description)] = make_submission(base / f"{stem}-{number}", assignment, {stem: source})
    reports = grade_many(list(roots.values()), assignment, "--probe-timeout", "5")
    return assignment, {key: reports[root] for key, root in roots.items()}


def test_every_module_has_mutants_including_hard_coded_outputs(graded_mutants):
    assignment, _ = graded_mutants
    rubric = tomllib.loads((ROOT / "tests" / assignment / "rubric.toml").read_text())
    mutants = mutants_of(assignment)
    assert set(mutants) == set(rubric["exercises"])
    for stem, listed in mutants.items():
        assert any("hard-coded" in description for description, _, _ in listed), stem


def test_every_mutant_loses_points_in_its_module_only(graded_mutants):
    _, reports = graded_mutants
    for (stem, description), report in reports.items():
        assert report["grader_errors"] == [], (stem, description, report["grader_errors"])
        for ex in report["exercises"]:
            if ex["name"] == stem:
                assert ex["score"] < ex["max_score"], f"{stem}: mutant {description!r} lost no points"
            else:
                assert ex["score"] == ex["max_score"], f"{stem}: mutant {description!r} cost points in {ex['name']}"


def test_every_hidden_test_fails_on_some_mutant(graded_mutants):
    """Every case of every test: a table of cases is as many checks, each of which must be able to fail."""
    assignment, reports = graded_mutants
    for module in rubrics.load(ROOT / "tests" / assignment, assignment).exercises:
        cases, killed = set(), set()
        for (mutated, _), report in reports.items():
            if mutated == module.name:
                tests = exercise(report, module.name)["tests"]
                cases |= {t["name"] for t in tests}
                killed |= {t["name"] for t in tests if t["status"] != "passed"}
        assert {name.split("[")[0] for name in cases} == set(module.points), module.name
        assert cases - killed == set(), f"{module.name}: tests no mutant fails"


def test_hard_coded_outputs_are_caught_by_behaviour_checks(graded_mutants):
    _, reports = graded_mutants
    for (stem, description), report in reports.items():
        if "hard-coded" in description:
            failing = [t["name"] for t in exercise(report, stem)["tests"] if t["status"] != "passed"]
            # Tests of printed book values are named *textbook* (ch03) or *book* (d2l).
            assert any("book" not in name for name in failing), (stem, failing)


def test_every_mistake_gets_its_concept_and_no_wrong_one(graded_mutants):
    assignment, reports = graded_mutants
    wrong = []
    for (stem, description), report in reports.items():
        concept = concept_of(assignment, stem, description)
        diagnosis = exercise(report, stem)["diagnosis"] or {}
        concepts = diagnosis.get("concepts", [])
        if concept and concept not in concepts:
            wrong.append((stem, description, "missing", concepts))
        extra = [c for c in concepts if c != concept]
        if extra:
            wrong.append((stem, description, "wrong", extra))
        hinted = any((test.get("feedback") or {}).get("hint") for test in exercise(report, stem)["tests"]
                     if test["status"] != "passed")  # a check that states the cause (an exact relation) tells it
        if not concepts and not (diagnosis.get("stage") or diagnosis.get("error") or hinted):
            wrong.append((stem, description, "no diagnosis", diagnosis))
    assert wrong == [], "\n".join(map(str, wrong))


@pytest.mark.parametrize("text", ["[[mistake]]\ndescription = 'd'\nold = 'a'\nconcept = ''\n",  # no `new`
                                  "[[mistake]]\ndescription = 'd'\nold = 'a'\nnew = 'b'\nconcept = ''\nstem = 'x'\n",
                                  "[[mistake]\n", "[mistakes]\n"])
def test_a_catalog_file_that_is_not_a_list_of_mistakes_is_named(tmp_path, text):
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "causal.toml").write_text(text)
    with pytest.raises(catalog.CatalogError, match=r"causal\.toml: not a list of \[\[mistake\]\] tables"):
        catalog.load(tmp_path)


def test_a_catalog_file_gives_its_stem_to_every_mistake(tmp_path):
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "mha.toml").write_text(
        "[[mistake]]\ndescription = 'd'\nold = '''\n    a\n'''\nnew = 'b'\nconcept = 'c'\nrandom = true\n")
    assert catalog.load(tmp_path) == [catalog.Mistake("mha", "d", "    a\n", "b", "c", True)]
    assert catalog.load(tmp_path / "nowhere") == []
