import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memstack.agents.skills import (
    MAX_SKILL_BYTES,
    Skill,
    discover_skills,
    load_skill,
    render_skills,
    scan_skills,
    select_skills,
    skill_search_dirs,
    skills_section,
)
from memstack.errors import InvalidInput


@dataclass
class Where:
    """The surroundings skill discovery reads: environment, working and home directories."""

    cwd: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)

    def discover(self, *skill_dirs: Path) -> list[Skill]:
        return discover_skills(skill_dirs=skill_dirs, env=self.env, cwd=self.cwd, home=self.home)

    def section(
        self, objective: str, *, skills: list[str] | None = None, skill_dirs: Sequence[Path] = ()
    ) -> str:
        return skills_section(
            objective,
            skills=skills,
            skill_dirs=skill_dirs,
            env=self.env,
            cwd=self.cwd,
            home=self.home,
        )


@pytest.fixture
def where(tmp_path: Path) -> Where:
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    return Where(cwd=tmp_path / "project", home=tmp_path / "home")


def write_skill(
    directory: Path, name: str, description: str = "A skill.", body: str = "Do it well."
) -> Path:
    path = directory / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- the file format ------------------------------------------------------------------


def test_a_skill_is_read_from_its_front_matter_and_body(tmp_path: Path):
    path = write_skill(
        tmp_path,
        "data-analysis",
        "Analyze CSV datasets and produce summary statistics",
        "When working with data analysis tasks:\n1. Load the dataset\n2. Summarize it",
    )
    assert load_skill(path) == Skill(
        name="data-analysis",
        description="Analyze CSV datasets and produce summary statistics",
        instructions="When working with data analysis tasks:\n1. Load the dataset\n2. Summarize it",
        path=path,
    )


@pytest.mark.parametrize(
    ("front_matter", "description"),
    [
        ('description: "Quoted: with \\"escapes\\" \\u00e9"', 'Quoted: with "escapes" é'),
        ("description: 'It''s single-quoted'", "It's single-quoted"),
        ("description: Use when: the user asks", "Use when: the user asks"),
        ("description: Plain value # a comment", "Plain value"),
        ("description: Handles C# code", "Handles C# code"),
        ("description: First line\n  continues here", "First line continues here"),
        ("description: >\n  Folded\n  block\n\n  value", "Folded block value"),
        ("description: |-\n  Literal\n  block", "Literal block"),
        ('description: "Quoted across\n  two lines"', "Quoted across two lines"),
        (
            "# a comment\nlicense: MIT\nallowed-tools:\n- Read\n- Write\nmetadata:\n"
            "  version: 1.0\ndescription: With extra keys",
            "With extra keys",
        ),
    ],
)
def test_front_matter_values(tmp_path: Path, front_matter: str, description: str):
    path = write_file(tmp_path / "SKILL.md", f"---\nname: demo\n{front_matter}\n---\nBody.\n")
    assert load_skill(path).description == description


@pytest.mark.parametrize("text", ["\ufeff---\r\nname: demo\r\ndescription: D\r\n---\r\nBody\r\n"])
def test_a_byte_order_mark_and_crlf_line_ends_are_accepted(tmp_path: Path, text: str):
    path = tmp_path / "SKILL.md"
    path.write_bytes(text.encode("utf-8"))
    skill = load_skill(path)
    assert (skill.name, skill.description, skill.instructions) == ("demo", "D", "Body")


MALFORMED = [
    pytest.param("Just instructions.\n", "does not start with front matter", id="no-front-matter"),
    pytest.param("---\nname: x\ndescription: d\nBody\n", "never closed", id="unclosed"),
    pytest.param("---\ndescription: d\n---\nBody\n", "has no 'name'", id="no-name"),
    pytest.param("---\nname: demo\n---\nBody\n", "has no 'description'", id="no-description"),
    pytest.param(
        "---\nname: Data Analysis\ndescription: d\n---\nBody\n", "invalid name", id="bad-name"
    ),
    pytest.param("---\nname: demo\ndescription: d\n---\n\n", "no instructions", id="no-body"),
    pytest.param("---\nname demo\ndescription: d\n---\nB\n", "line 2: expected", id="no-colon"),
    pytest.param("---\n  name: demo\n---\nB\n", "indented line must follow", id="indented"),
    pytest.param(
        "---\nname: demo\ndescription: 'open\n---\nB\n", "does not close it", id="open-quote"
    ),
    pytest.param(
        '---\nname: demo\ndescription: "bad \\q"\n---\nB\n', "invalid escape", id="bad-escape"
    ),
    pytest.param(
        "---\nname: demo\ndescription: Use <b>bold</b>\n---\nB\n", "XML tags", id="xml-tags"
    ),
    pytest.param(
        f"---\nname: demo\ndescription: {'d' * 1025}\n---\nB\n", "longer than", id="long-desc"
    ),
    pytest.param(
        f"---\nname: demo\ndescription: d\n---\n{'x' * MAX_SKILL_BYTES}\n", "larger than", id="big"
    ),
]


@pytest.mark.parametrize(("text", "reason"), MALFORMED)
def test_a_malformed_skill_file_is_an_error_naming_the_file(tmp_path: Path, text: str, reason: str):
    path = write_file(tmp_path / "demo" / "SKILL.md", text)
    with pytest.raises(InvalidInput, match=reason) as caught:
        load_skill(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert caught.value.field == "skills"


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path):
    path = tmp_path / "SKILL.md"
    path.write_bytes(b"---\nname: demo\ndescription: \xff\n---\nBody\n")
    with pytest.raises(InvalidInput, match="is not UTF-8 text"):
        load_skill(path)


# -- discovery ------------------------------------------------------------------------

LOCATIONS = ["caller", "env", "project", "home-claude", "home-codex"]


def _location(where: Where, tmp_path: Path, location: str) -> Path:
    return {
        "caller": tmp_path / "caller-skills",
        "env": tmp_path / "env-skills",
        "project": where.cwd / ".claude" / "skills",
        "home-claude": where.home / ".claude" / "skills",
        "home-codex": where.home / ".codex" / "skills",
    }[location]


@pytest.mark.parametrize("first", range(len(LOCATIONS)))
def test_earlier_directories_shadow_later_ones(where: Where, tmp_path: Path, first: int):
    where.env["MEMSTACK_AGENT_SKILL_DIRS"] = str(tmp_path / "env-skills")
    for location in LOCATIONS[first:]:
        write_skill(_location(where, tmp_path, location), "shared", f"from {location}")
        write_skill(_location(where, tmp_path, location), f"only-{location}")
    skills = where.discover(tmp_path / "caller-skills")
    by_name = {skill.name: skill for skill in skills}
    assert by_name["shared"].description == f"from {LOCATIONS[first]}"
    assert [s.name for s in skills] == [
        "only-" + LOCATIONS[first],
        "shared",
        *(f"only-{location}" for location in LOCATIONS[first + 1 :]),
    ]


def test_the_spec_name_of_the_skill_dirs_variable(where: Where, tmp_path: Path):
    where.env["NODETOOL_AGENT_SKILL_DIRS"] = str(tmp_path / "spec-skills")
    write_skill(tmp_path / "spec-skills", "from-spec-dir")
    assert [s.name for s in where.discover()] == ["from-spec-dir"]
    where.env["MEMSTACK_AGENT_SKILL_DIRS"] = str(tmp_path / "own-skills")
    write_skill(tmp_path / "own-skills", "from-own-dir")
    assert [s.name for s in where.discover()] == ["from-own-dir"]


def test_search_directories_in_order(where: Where, tmp_path: Path):
    where.env["MEMSTACK_AGENT_SKILL_DIRS"] = os.pathsep.join(
        ["~/mine", "relative/skills", "", str(tmp_path / "abs")]
    )
    dirs = skill_search_dirs(
        skill_dirs=[Path("given"), tmp_path / "abs"], env=where.env, cwd=where.cwd, home=where.home
    )
    assert dirs == [
        where.cwd / "given",
        tmp_path / "abs",
        where.home / "mine",
        where.cwd / "relative" / "skills",
        where.cwd / ".claude" / "skills",
        where.home / ".claude" / "skills",
        where.home / ".codex" / "skills",
    ]


def test_a_home_that_is_the_working_directory_is_searched_once(tmp_path: Path):
    dirs = skill_search_dirs(env={}, cwd=tmp_path, home=tmp_path)
    assert dirs == [tmp_path / ".claude" / "skills", tmp_path / ".codex" / "skills"]


def test_layouts_a_skill_directory_may_have(tmp_path: Path, where: Where):
    root = tmp_path / "skills"
    write_skill(root, "plain")
    write_skill(root / "group", "grouped")
    write_skill(root / "outer", "inner-resource")  # below a skill: its resource, not a skill
    write_skill(root, "outer")
    write_skill(root / ".hidden", "hidden")
    write_skill(root / "a" / "b" / "c", "too-deep")
    direct = write_file(
        tmp_path / "single" / "SKILL.md", "---\nname: single\ndescription: d\n---\nB\n"
    )
    skills = where.discover(root, tmp_path / "single")
    assert [s.name for s in skills] == ["grouped", "outer", "plain", "single"]
    assert skills[-1].path == direct


def test_broken_skills_are_skipped_with_the_reason_kept(tmp_path: Path, where: Where):
    root = tmp_path / "skills"
    write_skill(root, "good")
    broken = write_file(root / "broken" / "SKILL.md", "no front matter")
    scan = scan_skills(
        skill_dirs=[root, tmp_path / "missing"], env=where.env, cwd=where.cwd, home=where.home
    )
    assert [s.name for s in scan.skills] == ["good"]
    assert [(p.path, p.name) for p in scan.problems] == [
        (broken, "broken"),
        (tmp_path / "missing", None),
    ]
    assert "does not start with front matter" in scan.problems[0].reason
    assert scan.problems[1].reason == "is not a directory"


# -- selection ------------------------------------------------------------------------


def _skill(name: str, description: str) -> Skill:
    return Skill(name=name, description=description, instructions=f"{name} rules", path=Path(name))


AVAILABLE = [
    _skill("data-analysis", "Analyze CSV datasets and produce summary statistics"),
    _skill("pdf", "Extract text and tables from PDF documents"),
    _skill("release-notes", "Write the changelog for a version"),
]


@pytest.mark.parametrize(
    ("objective", "chosen"),
    [
        ("Summarize the quarterly dataset", ["data-analysis"]),  # dataset ~ datasets
        ("Extract the tables from report.pdf", ["pdf"]),
        ("Draft release notes for 2.0", ["release-notes"]),  # matched by name
        ("Analyze the datasets, then write a changelog", ["data-analysis", "release-notes"]),
        ("Fix it in a CSV", []),  # short words ("fix", "csv") are ignored
        ("Please produce something with this and that", ["data-analysis"]),  # "produce"
        ("Please help with this task", []),  # stop words only
        ("", []),
    ],
)
def test_auto_selection_matches_objective_words(objective: str, chosen: list[str]):
    skills = select_skills(objective, AVAILABLE, explicit=None, auto=True)
    assert [s.name for s in skills] == chosen


def test_auto_selection_can_be_turned_off():
    assert select_skills("Extract tables from a PDF", AVAILABLE, explicit=None, auto=False) == []


@pytest.mark.parametrize(
    ("explicit", "chosen"),
    [
        (["pdf"], ["pdf"]),
        (["release-notes", "pdf", "release-notes"], ["release-notes", "pdf"]),
        ([], []),  # explicitly none: auto-selection does not run
    ],
)
def test_explicit_names_choose_exactly_those_skills(explicit: list[str], chosen: list[str]):
    skills = select_skills("Analyze the datasets", AVAILABLE, explicit=explicit, auto=True)
    assert [s.name for s in skills] == chosen


def test_an_unknown_explicit_name_lists_the_available_ones():
    with pytest.raises(InvalidInput, match="unknown skill 'nope'") as caught:
        select_skills("", AVAILABLE, explicit=["pdf", "nope"], auto=True)
    assert "available skills: data-analysis, pdf, release-notes" in str(caught.value)
    assert caught.value.field == "skills"


def test_an_explicitly_requested_broken_skill_names_its_file(tmp_path: Path, where: Where):
    broken = write_file(tmp_path / "skills" / "broken" / "SKILL.md", "---\nname: broken\n")
    with pytest.raises(InvalidInput, match="front matter that is never closed") as caught:
        where.section("anything", skills=["broken"], skill_dirs=[tmp_path / "skills"])
    assert f"skill 'broken' cannot be loaded: {broken}" in str(caught.value)


# -- rendering and the whole path -----------------------------------------------------


def test_render_skills():
    assert render_skills([]) == ""
    assert render_skills(AVAILABLE[:2]) == (
        "# Agent Skills\n"
        "Use these Skill instructions when relevant to the objective:\n"
        "\n## data-analysis\ndata-analysis rules\n"
        "\n## pdf\npdf rules"
    )


@pytest.fixture
def installed(where: Where) -> Where:
    skills = where.cwd / ".claude" / "skills"
    write_skill(skills, "pdf", "Extract text and tables from PDF documents", "Use pdftotext.")
    write_skill(skills, "haiku", "Write poems as haiku", "Five, seven, five.")
    return where


@pytest.mark.parametrize(
    ("env", "skills", "objective", "chosen"),
    [
        ({}, None, "Extract the tables from this PDF", ["pdf"]),
        ({}, ["haiku"], "Extract the tables from this PDF", ["haiku"]),
        ({"MEMSTACK_AGENT_SKILLS": " haiku , pdf "}, None, "anything", ["haiku", "pdf"]),
        ({"MEMSTACK_AGENT_SKILLS": "haiku"}, ["pdf"], "anything", ["pdf"]),  # argument wins
        ({"MEMSTACK_AGENT_SKILLS": " , "}, None, "Write poems", ["haiku"]),  # blank: auto
        ({"MEMSTACK_AGENT_AUTO_SKILLS": "0"}, None, "Extract the tables from this PDF", []),
        ({"MEMSTACK_AGENT_AUTO_SKILLS": "off"}, None, "Write poems", []),
        ({"MEMSTACK_AGENT_AUTO_SKILLS": "1"}, None, "Write poems", ["haiku"]),
        ({"MEMSTACK_AGENT_AUTO_SKILLS": "0"}, ["pdf"], "anything", ["pdf"]),  # explicit still
        ({}, [], "Write poems", []),
        # the specification's names are aliases; memstack's own wins when both are set
        ({"NODETOOL_AGENT_SKILLS": "haiku"}, None, "anything", ["haiku"]),
        ({"NODETOOL_AGENT_AUTO_SKILLS": "0"}, None, "Write poems", []),
        (
            {"NODETOOL_AGENT_SKILLS": "haiku", "MEMSTACK_AGENT_SKILLS": "pdf"},
            None,
            "anything",
            ["pdf"],
        ),
        (
            {"NODETOOL_AGENT_AUTO_SKILLS": "0", "MEMSTACK_AGENT_AUTO_SKILLS": "1"},
            None,
            "Write poems",
            ["haiku"],
        ),
    ],
)
def test_skills_section(
    installed: Where,
    env: dict[str, str],
    skills: list[str] | None,
    objective: str,
    chosen: list[str],
):
    installed.env.update(env)
    section = installed.section(objective, skills=skills)
    by_name = {s.name: s for s in installed.discover()}
    assert section == render_skills([by_name[name] for name in chosen])


def test_skills_section_renders_under_the_agent_skills_header(installed: Where):
    assert installed.section("Convert a PDF document") == (
        "# Agent Skills\n"
        "Use these Skill instructions when relevant to the objective:\n"
        "\n## pdf\nUse pdftotext."
    )


def test_skills_section_with_an_unknown_explicit_name(installed: Where):
    installed.env["MEMSTACK_AGENT_SKILLS"] = "missing"
    with pytest.raises(InvalidInput, match="available skills: haiku, pdf"):
        installed.section("anything")
