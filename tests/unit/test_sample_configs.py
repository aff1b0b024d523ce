"""The sample files under ``etc/`` document every option the code registers.

Each command reads its own sample file after ``etc/neutrino.conf``: the
server ``ml2_conf.ini``, each agent ``<name>_agent.ini``. In a sample, every
option of the command's groups has, in its section, a ``#name = default``
line under a ``# ...`` block that starts with the option's help; a sample
may set another value on an uncommented ``name = value`` line right below
it. So an option added to the code without a sample line, a default changed
in one place only, or a sample line naming an option that does not exist,
fails here.

Which file holds a group comes from the code: an agent's groups
(``AGENT_OPTIONS`` and its ``option_groups``) go in its own file, a core
plugin's in ``<plugin>_conf.ini``, and every other group found anywhere in
the package (the server's, a service plugin's, a new module's) in
``neutrino.conf``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import neutrino
from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.config import Opt, OptGroup

ETC = Path(__file__).resolve().parents[2] / "etc"
SERVER_SAMPLE = "neutrino.conf"
#: modules that cannot be imported on their own (alembic runs them)
NOT_IMPORTABLE = ("neutrino.db.migrations",)

_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\]\s*$")
_DEFAULT_LINE = re.compile(r"^#(?P<name>\w+) =(?: (?P<value>.*))?$")
_VALUE_LINE = re.compile(r"^(?P<name>\w+) =(?: (?P<value>.*))?$")


# --- what the code registers --------------------------------------------------------------


def _modules() -> list[object]:
    found = []
    for info in pkgutil.walk_packages(neutrino.__path__, "neutrino."):
        if not info.name.startswith(NOT_IMPORTABLE):
            found.append(importlib.import_module(info.name))
    return found


def _groups_in(value: object) -> list[OptGroup]:
    if isinstance(value, OptGroup):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, OptGroup)]
    return []


def all_groups() -> list[OptGroup]:
    """Every option group defined in the package: module level, in module-level
    lists and tuples, and in classes' ``option_groups``."""
    seen: dict[int, OptGroup] = {}
    for module in _modules():
        for value in vars(module).values():
            candidates = _groups_in(value)
            if inspect.isclass(value):
                candidates = _groups_in(getattr(value, "option_groups", ()))
            for group in candidates:
                seen.setdefault(id(group), group)
    return list(seen.values())


def agent_classes() -> list[type[Agent]]:
    _modules()  # every agent module imported, so that every subclass exists
    found, todo = [], list(Agent.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.binary:
            found.append(cls)
    return sorted(found, key=lambda cls: cls.binary)


def agent_sample(cls: type[Agent]) -> str:
    """``neutrino-dhcp-agent`` -> ``dhcp_agent.ini``."""
    return cls.binary.removeprefix("neutrino-").replace("-", "_") + ".ini"


def expected_samples() -> dict[str, list[OptGroup]]:
    """Sample file -> the option groups it documents."""
    samples: dict[str, list[OptGroup]] = {}
    owned: set[int] = set()
    for cls in agent_classes():
        groups = [AGENT_OPTIONS, *cls.option_groups]
        samples[agent_sample(cls)] = groups
        owned.update(id(group) for group in groups)
    for plugin in entry_points(group="neutrino.core_plugins"):
        groups = list(plugin.load().option_groups)
        samples[f"{plugin.name}_conf.ini"] = groups
        owned.update(id(group) for group in groups)
    samples[SERVER_SAMPLE] = [group for group in all_groups() if id(group) not in owned]
    return samples


def options(groups: list[OptGroup]) -> dict[tuple[str, str], Opt]:
    """(section, name) -> option; a group registered twice counts once."""
    found: dict[tuple[str, str], Opt] = {}
    for group in groups:
        for opt in group.opts:
            found.setdefault((group.name, opt.name), opt)
    return found


# --- what a sample says --------------------------------------------------------------------


@dataclass
class Documented:
    line: int
    default: str
    help: str
    value: str | None = None  #: the sample's own value, when it sets one


@dataclass
class Sample:
    sections: set[str] = field(default_factory=set)
    options: dict[tuple[str, str], Documented] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_sample(path: Path) -> Sample:
    sample = Sample()
    section = "DEFAULT"
    comment: list[str] = []
    last: tuple[str, str] | None = None  # the option whose default line was just read
    for number, line in enumerate(path.read_text().splitlines(), 1):
        where = f"{path.name}:{number}"
        if match := _SECTION.match(line):
            section, comment, last = match["name"], [], None
            sample.sections.add(section)
        elif match := _DEFAULT_LINE.match(line):
            key = (section, match["name"])
            if key in sample.options:
                sample.problems.append(f"{where}: {match['name']} in [{section}] twice")
            sample.options[key] = Documented(number, match["value"] or "", " ".join(comment))
            comment, last = [], key
        elif match := _VALUE_LINE.match(line):
            key = (section, match["name"])
            if last != key:
                sample.problems.append(f"{where}: {match['name']} = ... must come right "
                                       f"below its #{match['name']} = <default> line")
            else:
                sample.options[key].value = match["value"] or ""
            comment, last = [], None
        elif line.startswith("# ") or line == "#":
            comment.append(line[2:].strip())
            last = None
        elif line.startswith("#"):
            sample.problems.append(f"{where}: neither '# text' nor '#option = default'")
        else:  # a blank line ends a comment block
            comment, last = [], None
    return sample


def _is_default(opt: Opt, text: str) -> bool:
    if text.strip() == "" and opt.default in (None, "", [], {}):
        return True
    try:
        return opt.parse(text) == opt.default
    except ValueError:
        return False


# --- the checks -------------------------------------------------------------------------------


SAMPLES = expected_samples()


def test_every_command_has_a_sample_file():
    assert set(SAMPLES) <= {path.name for path in ETC.iterdir()}, sorted(SAMPLES)
    assert {"neutrino.conf", "ml2_conf.ini", "linuxbridge_agent.ini", "openvswitch_agent.ini",
            "dhcp_agent.ini", "l3_agent.ini", "metadata_agent.ini"} <= set(SAMPLES)


def test_every_option_group_of_the_package_has_a_home():
    """A group defined anywhere lands in some sample (the server's by default)."""
    placed = {id(group) for groups in SAMPLES.values() for group in groups}
    assert all(id(group) in placed for group in all_groups())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_documents_every_option_with_its_default(name):
    sample = read_sample(ETC / name)
    assert not sample.problems, sample.problems
    expected = options(SAMPLES[name])
    missing = sorted(f"[{s}] {o}" for s, o in expected.keys() - sample.options.keys())
    assert not missing, f"{name} lacks a '#option = default' line for {missing}"
    unknown = sorted(f"[{s}] {o}" for s, o in sample.options.keys() - expected.keys())
    assert not unknown, f"{name} documents options the code does not register: {unknown}"
    stray = sorted(sample.sections - {section for section, _ in expected})
    assert not stray, f"{name} has sections no group of its command reads: {stray}"
    for key, opt in expected.items():
        documented = sample.options[key]
        where = f"{name}:{documented.line} [{key[0]}] {key[1]}"
        assert _is_default(opt, documented.default), \
            f"{where}: shows {documented.default!r}, the default is {opt.default!r}"
        assert documented.help.startswith(" ".join(opt.help.split())), \
            f"{where}: the comment above must start with {opt.help!r}"
        if documented.value is not None:
            try:
                opt.parse(documented.value)
            except ValueError as error:
                pytest.fail(f"{where}: the sample's value {documented.value!r}: {error}")


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_as_it_is(name):
    """What a sample sets, read as its command reads it, is no configuration error."""
    conf = config.load([str(ETC / name)])
    conf.register(SAMPLES[name])


def test_the_check_notices_a_missing_option(tmp_path):
    """The reader is not blind: a line taken out of a sample is missed."""
    text = (ETC / "l3_agent.ini").read_text()
    cut = re.sub(r"(?m)^#max_rtr_adv_interval = .*\n(max_rtr_adv_interval = .*\n)?", "", text)
    assert cut != text
    (tmp_path / "l3_agent.ini").write_text(cut)
    assert ("DEFAULT", "max_rtr_adv_interval") not in read_sample(
        tmp_path / "l3_agent.ini").options
    assert ("DEFAULT", "max_rtr_adv_interval") in read_sample(ETC / "l3_agent.ini").options
