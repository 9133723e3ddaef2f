"""Grid-wide fairshare policies (sites/fairshare.py): the paper's figures in XML and TOML,
mounting, validation, job mapping, deviation tuples and base-200 priorities worked out by
hand, subgroup isolation as a property, and the usage approaches of section 5.1 on a
hand-made timeline.

Reading tested here (module docstring): an entry's ``scope`` is the scope of its own usage
source and governs its children's deviations, so in Figure 4 the VO deviations come from
local usage and the project and user deviations from global usage.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.sites.fairshare import (
    APPROACHES,
    Entry,
    PolicyError,
    UsageRecord,
    Windows,
    actual_shares,
    aggregate,
    depth,
    deviation_tuple,
    entries,
    job_priority,
    leaves,
    map_path,
    priority,
    target_shares,
    usage_of,
)
from gridemu.sites.fairshare_forms import (
    default_scope_of,
    figure_2_xml,
    figure_4,
    mount,
    policy_from_dict,
    policy_from_toml,
    policy_from_xml,
    validate,
)

VO_A_URL = "http://vo-a.org/policy-provider"
VO_B_URL = "http://vo-b.org/policy-provider"


def E(name, etype, share, scope, *children, ref=None):
    return Entry(name, etype, float(share), scope, tuple(children), ref)


def figure_2_parsed():
    resource, vo_a, vo_b = figure_2_xml()
    return (
        policy_from_xml(resource),
        policy_from_xml(vo_a, name="VO-A"),
        policy_from_xml(vo_b, name="VO-B"),
    )


# Figure 1: the policy of Figure 2 after mounting (the root is called Cluster in Figure 2).
FIGURE_1 = E(
    "Cluster", "resource", 100, "local",
    E("VO-A", "VO", 50, "global",
      E("P-A1", "project", 25, "global",
        E("U-A11", "user", 50, "global"),
        E("U-A12", "user", 50, "global")),
      E("P-A2", "project", 25, "global"),
      E("P-A3", "project", 25, "global"),
      E("P-A4", "project", 25, "global")),
    E("VO-B", "VO", 25, "global",
      E("P-B1", "project", 60, "global"),
      E("P-B2", "project", 30, "global"),
      E("P-B3", "project", 10, "global")),
    E("Local", "local", 25, "local"),
)  # fmt: skip

FIGURE_2_TOML_RESOURCE = """
[policy]
name = "Cluster"
type = "resource"
source = "jdbc:mysql://localhost/usage"

[[policy.children]]
name = "VO-A"
type = "VO"
share = 50
ref = "http://vo-a.org/policy-provider"

[[policy.children]]
name = "VO-B"
type = "VO"
share = 25
ref = "http://vo-b.org/policy-provider"

[[policy.children]]
name = "Local"
type = "local"
share = 25
"""

FIGURE_2_TOML_VO_A = """
[policy]
name = "VO-A"
type = "subpolicy"
source = "http://swegrid.se/vo-a/usage"

[[policy.children]]
name = "P-A1"
type = "project"
share = 25
[[policy.children.children]]
name = "U-A11"
type = "user"
share = 50
[[policy.children.children]]
name = "U-A12"
type = "user"
share = 50

[[policy.children]]
name = "P-A2"
type = "project"
share = 25
[[policy.children]]
name = "P-A3"
type = "project"
share = 25
[[policy.children]]
name = "P-A4"
type = "project"
share = 25
"""

FIGURE_2_TOML_VO_B = """
[policy]
name = "VO-B"
type = "subpolicy"
scope = "global"

[[policy.children]]
name = "P-B1"
type = "project"
share = 60
[[policy.children]]
name = "P-B2"
type = "project"
share = 30
[[policy.children]]
name = "P-B3"
type = "project"
share = 10
"""

FIGURE_4_TOML = """
[policy]
name = "Resource"
type = "resource"
scope = "local"

[[policy.children]]
name = "VO-A"
type = "VO"
share = 30
scope = "global"
[[policy.children.children]]
name = "P-A1"
type = "project"
share = 50
[[policy.children.children]]
name = "P-A2"
type = "project"
share = 30
[[policy.children.children]]
name = "P-A3"
type = "project"
share = 20

[[policy.children]]
name = "VO-B"
type = "VO"
share = 70
scope = "global"
[[policy.children.children]]
name = "P-B1"
type = "project"
share = 60
[[policy.children.children.children]]
name = "U-B11"
type = "user"
share = 55
[[policy.children.children.children]]
name = "U-B12"
type = "user"
share = 30
[[policy.children.children.children]]
name = "U-B13"
type = "user"
share = 15
[[policy.children.children]]
name = "P-B2"
type = "project"
share = 40
"""

FIGURE_4_XML_RESOURCE = """<?xml version="1.0"?>
<policy-entry type="resource" name="Resource">
  <usage-source at="jdbc:mysql://localhost/usage"/>
  <child-entries>
    <policy-entry type="VO" name="VO-A" share="30">
      <policy-reference><at>http://vo-a.org/policy-provider</at></policy-reference>
    </policy-entry>
    <policy-entry type="VO" name="VO-B" share="70">
      <policy-reference><at>http://vo-b.org/policy-provider</at></policy-reference>
    </policy-entry>
  </child-entries>
</policy-entry>
"""

FIGURE_4_XML_VO_A = """
<usage-source at="http://grid.example.org/vo-a/usage"/>
<child-entries>
  <policy-entry type="project" name="P-A1" share="50"/>
  <policy-entry type="project" name="P-A2" share="30"/>
  <policy-entry type="project" name="P-A3" share="20"/>
</child-entries>
"""

FIGURE_4_XML_VO_B = """
<usage-source at="http://grid.example.org/vo-b/usage"/>
<child-entries>
  <policy-entry type="project" name="P-B1" share="60">
    <child-entries>
      <policy-entry type="user" name="U-B11" share="55"/>
      <policy-entry type="user" name="U-B12" share="30"/>
      <policy-entry type="user" name="U-B13" share="15"/>
    </child-entries>
  </policy-entry>
  <policy-entry type="project" name="P-B2" share="40"/>
</child-entries>
"""


# ------------------------------------------------------------------ parsing and forms


def test_figure_2_parses_and_mounts_to_figure_1():
    resource, vo_a, vo_b = figure_2_parsed()
    assert [c.ref for c in resource.children] == [VO_A_URL, VO_B_URL, None]
    assert resource.source == "jdbc:mysql://localhost/usage" and resource.scope == "local"
    # before mounting, VO-A inherits the resource's local scope and has no children
    assert resource.children[0] == E("VO-A", "VO", 50, "local", ref=VO_A_URL)
    assert vo_a.scope == "global" and vo_a.source == "http://swegrid.se/vo-a/usage"
    mounted = mount(resource, {VO_A_URL: vo_a, VO_B_URL: vo_b})
    assert mounted == FIGURE_1
    validate(resource)
    validate(mounted)
    # the provider's source travels with its children; the local leaf keeps local scope
    assert mounted.children[0].source == "http://swegrid.se/vo-a/usage"
    assert mounted.children[1].source == "http://swegrid.se/vo-b/usage"
    assert mounted.children[2].scope == "local"
    assert all(c.ref is None for c in mounted.children)


def test_figure_2_xml_and_toml_forms_are_equal():
    resource, vo_a, vo_b = figure_2_parsed()
    t_resource = policy_from_toml(FIGURE_2_TOML_RESOURCE)
    t_vo_a = policy_from_toml(FIGURE_2_TOML_VO_A)
    t_vo_b = policy_from_toml(FIGURE_2_TOML_VO_B)
    assert t_resource == resource
    assert t_vo_a == vo_a
    assert t_vo_b == vo_b
    assert t_resource.source == resource.source
    assert mount(t_resource, {VO_A_URL: t_vo_a, VO_B_URL: t_vo_b}) == FIGURE_1


def test_figure_4_in_toml_and_xml_is_figure_4():
    fig4 = figure_4()
    validate(fig4)
    assert policy_from_toml(FIGURE_4_TOML) == fig4
    resource = policy_from_xml(FIGURE_4_XML_RESOURCE)
    providers = {
        VO_A_URL: policy_from_xml(FIGURE_4_XML_VO_A, name="VO-A"),
        VO_B_URL: policy_from_xml(FIGURE_4_XML_VO_B, name="VO-B"),
    }
    assert mount(resource, providers) == fig4
    assert depth(fig4) == 3
    assert [c.scope for c in fig4.children] == ["global", "global"]
    assert fig4.scope == "local"


def test_entry_equality_sees_scope_share_and_ref():
    fig4 = figure_4()
    assert replace(fig4, scope="global") != fig4
    assert replace(fig4.children[0], share=31.0) != fig4.children[0]
    assert replace(fig4.children[0], ref="x") != fig4.children[0]
    assert replace(fig4, source="anything") == fig4  # the address is recorded, not compared


def test_policy_from_dict_takes_the_root_table_or_the_document():
    root = {"name": "R", "type": "resource", "children": [{"name": "A", "type": "VO", "share": 100}]}
    assert (
        policy_from_dict(root)
        == policy_from_dict({"policy": root})
        == E("R", "resource", 100, "local", E("A", "VO", 100, "local"))
    )


def test_default_scope_of_and_custom_scope_of():
    assert default_scope_of("jdbc:mysql://localhost/usage") == "local"
    assert default_scope_of("jdbc:mysql://db.example.org/usage") == "local"
    assert default_scope_of("http://localhost:8080/usage") == "local"
    assert default_scope_of("/var/lib/usage.sqlite") == "local"
    assert default_scope_of("http://swegrid.se/vo-a/usage") == "global"
    _, vo_a, _ = figure_2_xml()
    assert policy_from_xml(vo_a, name="VO-A", scope_of=lambda at: "local").scope == "local"
    with pytest.raises(PolicyError, match=r"policy VO-A: scope must be 'local' or 'global', got 'grid'"):
        policy_from_xml(vo_a, name="VO-A", scope_of=lambda at: "grid")


def test_xml_usage_source_scope_attribute_wins():
    text = '<usage-source at="http://far.away/usage" scope="local"/><child-entries/>'
    assert policy_from_xml(text, name="X").scope == "local"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '<policy-entry type="r" name="R"><child-entries><policy-entry type="VO" name="A"/>'
            "</child-entries></policy-entry>",
            r"policy R/A: missing attribute 'share'",
        ),
        ('<policy-entry type="r" name="R"><bogus/></policy-entry>', r"policy R: unexpected element <bogus>"),
        ('<policy-entry type="r" name="R" weight="2"/>', r"policy R: unknown attribute 'weight'"),
        ('<policy-entry name="R"/>', r"policy R: missing attribute 'type'"),
        (
            '<policy-entry type="r" name="R"><child-entries><policy-entry type="VO" name="A" share="x"/>'
            "</child-entries></policy-entry>",
            r"policy R/A: share must be a number, got 'x'",
        ),
        (
            '<policy-entry type="r" name="R"><policy-reference/></policy-entry>',
            r"policy R: <policy-reference> must hold exactly one <at>",
        ),
        ("<policy-entry type='r' name='R'>", r"not well-formed XML"),
        ("<child-entries/><child-entries/>", r"policy subpolicy: <child-entries> given twice"),
    ],
)
def test_xml_errors_name_the_entry(text, message):
    with pytest.raises(PolicyError, match=message):
        policy_from_xml(text)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[policy]\nname = "R"\ntype = "r"\n[[policy.children]]\nname = "A"\ntype = "VO"\n',
            r"policy R/A: missing key 'share'",
        ),
        ('[policy]\nname = "R"\ntype = "r"\nweight = 1\n', r"policy R: unknown key 'weight'"),
        ('[policy]\nname = "R"\ntype = "r"\nscope = "grid"\n', r"policy R: scope must be 'local' or 'global'"),
        ('[policy]\nname = "R/S"\ntype = "r"\n', r"name must be a non-empty string without '/'"),
        (
            '[policy]\nname = "R"\ntype = "r"\n[[policy.children]]\ntype = "VO"\nshare = 1\n',
            r"policy R: children\[0\]: missing key 'name'",
        ),
        ('name = "R"\n', r"policy: the document has no \[policy\] table"),
    ],
)
def test_toml_errors_name_the_entry(text, message):
    with pytest.raises(PolicyError, match=message):
        policy_from_toml(text)


# ----------------------------------------------------------------------------- mount


def test_mount_unknown_reference_names_entry_and_ref():
    resource, vo_a, _ = figure_2_parsed()
    with pytest.raises(
        PolicyError, match=r"policy Cluster/VO-B: unknown policy reference 'http://vo-b.org/policy-provider'"
    ):
        mount(resource, {VO_A_URL: vo_a})


def test_mount_cycle_names_the_cycle():
    a = E("A", "subpolicy", 100, "global", E("X", "project", 100, "global", ref="B"))
    b = E("B", "subpolicy", 100, "global", E("Y", "user", 100, "global", ref="A"))
    root = E("R", "resource", 100, "local", E("V", "VO", 100, "local", ref="A"))
    with pytest.raises(PolicyError, match=r"policy R/V/X/Y: policy reference cycle A -> B -> A"):
        mount(root, {"A": a, "B": b})
    self_ref = E("S", "subpolicy", 100, "global", E("Z", "project", 100, "global", ref="S"))
    with pytest.raises(PolicyError, match=r"policy R/V/Z: policy reference cycle S -> S"):
        mount(E("R", "resource", 100, "local", E("V", "VO", 100, "local", ref="S")), {"S": self_ref})


def test_mount_is_recursive_and_takes_each_providers_scope():
    # VO provider delegates project P's subpolicy to a PI's provider with local usage
    vo = E("VO", "subpolicy", 100, "global", E("P", "project", 70, "global", ref="pi"), E("Q", "project", 30, "global"))
    pi = E("PI", "subpolicy", 100, "local", E("U1", "user", 50, "local"), E("U2", "user", 50, "local"))
    root = E("R", "resource", 100, "local", E("V", "VO", 100, "local", ref="vo"))
    got = mount(root, {"vo": vo, "pi": pi})
    assert got == E(
        "R", "resource", 100, "local",
        E("V", "VO", 100, "global",
          E("P", "project", 70, "local", E("U1", "user", 50, "local"), E("U2", "user", 50, "local")),
          E("Q", "project", 30, "global")),
    )  # fmt: skip
    # a provider whose root itself refers on (pure delegation) is followed
    relay = E("relay", "subpolicy", 100, "global", ref="pi")
    got = mount(E("R", "resource", 100, "local", E("V", "VO", 100, "local", ref="relay")), {"relay": relay, "pi": pi})
    assert got.children[0] == E("V", "VO", 100, "local", E("U1", "user", 50, "local"), E("U2", "user", 50, "local"))


def test_mount_refuses_children_and_reference_together():
    root = E("R", "resource", 100, "local", E("V", "VO", 100, "local", E("P", "project", 100, "local"), ref="vo"))
    with pytest.raises(PolicyError, match=r"policy R/V: has both children and the policy reference 'vo'"):
        mount(root, {"vo": E("VO", "subpolicy", 100, "global")})
    with pytest.raises(PolicyError, match=r"policy R/V: has both children"):
        validate(root)


# -------------------------------------------------------------------------- validate


def _with_vo_a_children(*children):
    fig4 = figure_4()
    vo_a = replace(fig4.children[0], children=tuple(children))
    return replace(fig4, children=(vo_a, fig4.children[1]))


def test_validate_siblings_must_add_up_to_100():
    bad = _with_vo_a_children(
        E("P-A1", "project", 50, "global"), E("P-A2", "project", 30, "global"), E("P-A3", "project", 10, "global")
    )
    with pytest.raises(
        PolicyError, match=r"^policy Resource/VO-A: shares of the children of VO-A add up to 90, not 100$"
    ):
        validate(bad)
    # within the tolerance is fine
    validate(
        _with_vo_a_children(
            E("P-A1", "project", 100 / 3, "global"),
            E("P-A2", "project", 100 / 3, "global"),
            E("P-A3", "project", 100 / 3, "global"),
        )
    )


def test_validate_negative_and_zero_shares_name_the_entry():
    negative = _with_vo_a_children(
        E("P-A1", "project", -50, "global"), E("P-A2", "project", 130, "global"), E("P-A3", "project", 20, "global")
    )
    with pytest.raises(PolicyError, match=r"^policy Resource/VO-A/P-A1: share must be positive, got -50$"):
        validate(negative)
    zero = _with_vo_a_children(
        E("P-A1", "project", 50, "global"), E("P-A2", "project", 50, "global"), E("P-A3", "project", 0, "global")
    )
    with pytest.raises(PolicyError, match=r"^policy Resource/VO-A/P-A3: share must be positive, got 0$"):
        validate(zero)


def test_validate_duplicate_siblings_and_bad_names():
    dup = _with_vo_a_children(E("P-A1", "project", 50, "global"), E("P-A1", "project", 50, "global"))
    with pytest.raises(PolicyError, match=r"policy Resource/VO-A: two children named 'P-A1'"):
        validate(dup)
    slash = _with_vo_a_children(E("P/A1", "project", 100, "global"))
    with pytest.raises(PolicyError, match=r"name must be a non-empty string without '/'"):
        validate(slash)
    with pytest.raises(PolicyError, match=r"policy Resource: scope must be"):
        validate(replace(figure_4(), scope="site"))


def test_validate_ignores_the_root_share():
    validate(replace(figure_4(), share=42.0))
    _, vo_a, _ = figure_2_parsed()
    validate(vo_a)


# ----------------------------------------------------------------------- tree queries


def test_entries_leaves_targets_of_figure_4():
    fig4 = figure_4()
    assert entries(fig4) == [
        "VO-A", "VO-A/P-A1", "VO-A/P-A2", "VO-A/P-A3",
        "VO-B", "VO-B/P-B1", "VO-B/P-B1/U-B11", "VO-B/P-B1/U-B12", "VO-B/P-B1/U-B13", "VO-B/P-B2",
    ]  # fmt: skip
    assert leaves(fig4) == [
        "VO-A/P-A1", "VO-A/P-A2", "VO-A/P-A3",
        "VO-B/P-B1/U-B11", "VO-B/P-B1/U-B12", "VO-B/P-B1/U-B13", "VO-B/P-B2",
    ]  # fmt: skip
    targets = target_shares(fig4)
    assert targets["VO-A"] == pytest.approx(0.3) and targets["VO-B/P-B1/U-B13"] == pytest.approx(0.15)
    assert len(targets) == 10
    assert depth(E("R", "r", 100, "local")) == 0


def test_map_path():
    fig4 = figure_4()
    assert map_path(fig4, "VO-B/P-B1/U-B12") == ["VO-B", "VO-B/P-B1", "VO-B/P-B1/U-B12"]
    assert map_path(fig4, "VO-B/P-B1/U-B99") == ["VO-B", "VO-B/P-B1"]  # unknown user: stops at P-B1
    assert map_path(fig4, "VO-B/P-B1") == ["VO-B", "VO-B/P-B1"]
    assert map_path(fig4, "VO-A/P-A1/U-A11") == ["VO-A", "VO-A/P-A1"]  # P-A1 is a leaf
    assert map_path(fig4, "VO-A/P-B1") == ["VO-A"]  # P-B1 is not VO-A's
    assert map_path(fig4, "VO-C/P-A1") == []
    assert map_path(fig4, "") == []


# ------------------------------------------------------ deviations and priorities

# Local usage decides VO-A vs VO-B (Resource has local scope); global usage decides the
# projects and users (VO-A, VO-B and P-B1 have global scope). The "wrong" scope's numbers
# differ, so a mix-up would show.
LOCAL = {
    "VO-A": 400, "VO-B": 600,
    "VO-A/P-A1": 400, "VO-A/P-A2": 0, "VO-A/P-A3": 0,
    "VO-B/P-B1": 600, "VO-B/P-B2": 0, "VO-B/P-B1/U-B11": 600,
}  # fmt: skip
GLOBAL = {
    "VO-A": 1000, "VO-B": 1000,
    "VO-A/P-A1": 600, "VO-A/P-A2": 200, "VO-A/P-A3": 200,
    "VO-B/P-B1": 500, "VO-B/P-B2": 500,
    "VO-B/P-B1/U-B11": 300, "VO-B/P-B1/U-B12": 100, "VO-B/P-B1/U-B13": 100,
}  # fmt: skip


def test_deviation_tuples_of_figure_4_by_hand():
    fig4 = figure_4()

    def dev(group):
        return deviation_tuple(fig4, map_path(fig4, group), LOCAL, GLOBAL)

    # VO-A: 30 - 100*400/1000 = -10; VO-B: 70 - 60 = +10 (local usage)
    # P-A1: 50 - 60 = -10, P-A2: 30 - 20 = +10, P-A3: 20 - 20 = 0 (global)
    # P-B1: 60 - 50 = +10, P-B2: 40 - 50 = -10 (global)
    # U-B11: 55 - 60 = -5, U-B12: 30 - 20 = +10, U-B13: 15 - 20 = -5 (global)
    assert dev("VO-A/P-A1") == [-10.0, -10.0]
    assert dev("VO-A/P-A2") == [-10.0, 10.0]
    assert dev("VO-A/P-A3") == [-10.0, 0.0]
    assert dev("VO-B/P-B1/U-B11") == [10.0, 10.0, -5.0]
    assert dev("VO-B/P-B1/U-B12") == [10.0, 10.0, 10.0]
    assert dev("VO-B/P-B1/U-B13") == [10.0, 10.0, -5.0]
    assert dev("VO-B/P-B1/U-B99") == [10.0, 10.0]
    assert dev("VO-B/P-B2") == [10.0, -10.0]
    assert dev("VO-C") == []


def test_deviation_follows_the_parents_scope():
    fig4 = figure_4()
    # the same policy with a global root: VO deviations from global usage (1000:1000)
    glob = replace(fig4, scope="global")
    assert deviation_tuple(glob, ["VO-A", "VO-A/P-A1"], LOCAL, GLOBAL) == [-20.0, -10.0]
    # VO-A with a local source: its projects' deviations from local usage (400:0:0)
    local_a = replace(fig4, children=(replace(fig4.children[0], scope="local"), fig4.children[1]))
    assert deviation_tuple(local_a, ["VO-A", "VO-A/P-A1"], LOCAL, GLOBAL) == [-10.0, -50.0]
    assert deviation_tuple(local_a, ["VO-A", "VO-A/P-A2"], LOCAL, GLOBAL) == [-10.0, 30.0]


def test_priorities_of_figure_4_by_hand():
    fig4 = figure_4()
    d = depth(fig4)
    assert d == 3

    def prio(group):
        return job_priority(fig4, group, LOCAL, GLOBAL)

    # digits dev+100, base 200, padded with 0 deviations (digit 100)
    assert prio("VO-A/P-A1") == 90 * 200**2 + 90 * 200 + 100 == 3_618_100
    assert prio("VO-A/P-A2") == 90 * 200**2 + 110 * 200 + 100 == 3_622_100
    assert prio("VO-A/P-A3") == 90 * 200**2 + 100 * 200 + 100 == 3_620_100
    assert prio("VO-B/P-B1/U-B11") == 110 * 200**2 + 110 * 200 + 95 == 4_422_095
    assert prio("VO-B/P-B1/U-B12") == 110 * 200**2 + 110 * 200 + 110 == 4_422_110
    assert prio("VO-B/P-B1/U-B13") == 4_422_095
    assert prio("VO-B/P-B1/U-B99") == 110 * 200**2 + 110 * 200 + 100 == 4_422_100
    assert prio("VO-B/P-B2") == 110 * 200**2 + 90 * 200 + 100 == 4_418_100
    assert prio("VO-C/P-A1") == 100 * 200**2 + 100 * 200 + 100 == 4_020_100
    # the least favored entity (VO-B, then P-B1, then U-B12) has the highest priority
    order = sorted(
        ["VO-A/P-A1", "VO-A/P-A2", "VO-A/P-A3", "VO-B/P-B1/U-B11", "VO-B/P-B1/U-B12", "VO-B/P-B2"],
        key=prio,
        reverse=True,
    )
    assert order == ["VO-B/P-B1/U-B12", "VO-B/P-B1/U-B11", "VO-B/P-B2", "VO-A/P-A2", "VO-A/P-A3", "VO-A/P-A1"]


def test_priority_formula_and_errors():
    assert priority([], 0) == 0.0
    assert priority([], 2) == 100 * 200 + 100
    assert priority([100, -100], 2) == 200 * 200 + 0
    assert priority([12.5], 1) == 112.5
    with pytest.raises(ValueError, match=r"longer than d=1"):
        priority([1, 2], 1)
    with pytest.raises(ValueError, match=r"deviation\[1\]: must be within \[-100, 100\]"):
        priority([0, 150], 2)
    with pytest.raises(ValueError, match=r"deviation\[0\]"):
        priority([math.nan], 1)


def test_deviation_tuple_rejects_a_path_that_is_not_a_walk():
    fig4 = figure_4()
    with pytest.raises(ValueError, match=r"not a child of the previous one"):
        deviation_tuple(fig4, ["VO-A", "VO-B/P-B1"], LOCAL, GLOBAL)
    with pytest.raises(ValueError, match=r"no entry 'VO-C'"):
        deviation_tuple(fig4, ["VO-C"], LOCAL, GLOBAL)
    with pytest.raises(ValueError, match=r"usage VO-B: must be a finite number ≥ 0, got -1"):
        deviation_tuple(fig4, ["VO-A"], {"VO-A": 1, "VO-B": -1}, GLOBAL)


def test_actual_shares_and_zero_usage():
    fig4 = figure_4()
    shares = actual_shares(fig4, GLOBAL)
    assert shares["VO-A"] == 0.5 and shares["VO-A/P-A1"] == 0.6 and shares["VO-B/P-B1/U-B11"] == 0.6
    # no usage at all among siblings: actual 0 for each, deviation = target
    assert actual_shares(fig4, {})["VO-B/P-B1/U-B12"] == 0.0
    assert deviation_tuple(fig4, map_path(fig4, "VO-B/P-B1/U-B12"), {}, {}) == [70.0, 60.0, 30.0]
    # a parent's own jobs (stopped at P-B1) do not count among P-B1's children
    usage = {"VO-B/P-B1": 1000, "VO-B/P-B1/U-B11": 10, "VO-B/P-B1/U-B12": 30}
    assert actual_shares(fig4, usage)["VO-B/P-B1/U-B11"] == 0.25


# ------------------------------------------------------------- subgroup isolation

FIG4 = figure_4()
D4 = depth(FIG4)
# the lower digits together span at most 200·(200^(d-1) - 1)/199, i.e. this many units of
# the top digit: a top-level gap above it cannot be overturned by deeper levels
ISOLATION_GAP = 200 * (200 ** (D4 - 1) - 1) / 199 / 200 ** (D4 - 1)
GROUPS_A = ["VO-A/P-A1", "VO-A/P-A2", "VO-A/P-A3"]
GROUPS_B = ["VO-B/P-B1/U-B11", "VO-B/P-B1/U-B12", "VO-B/P-B1/U-B13", "VO-B/P-B1/U-B99", "VO-B/P-B2"]
amounts = st.integers(min_value=0, max_value=10_000)


def _usage(draw_values):
    keys = entries(FIG4)
    return dict(zip(keys, draw_values))


usages = st.lists(amounts, min_size=len(entries(FIG4)), max_size=len(entries(FIG4))).map(_usage)


@settings(max_examples=200, deadline=None)
@given(local=usages, global_=usages)
def test_subgroup_isolation_vo_order_decides(local, global_):
    dev_a = deviation_tuple(FIG4, ["VO-A"], local, global_)[0]
    dev_b = deviation_tuple(FIG4, ["VO-B"], local, global_)[0]
    prio_a = [job_priority(FIG4, g, local, global_) for g in GROUPS_A]
    prio_b = [job_priority(FIG4, g, local, global_) for g in GROUPS_B]
    if dev_a - dev_b > ISOLATION_GAP:
        assert min(prio_a) > max(prio_b)
    elif dev_b - dev_a > ISOLATION_GAP:
        assert min(prio_b) > max(prio_a)


@settings(max_examples=200, deadline=None)
@given(local=usages, global_=usages, p_a1=amounts, p_a2=amounts)
def test_subgroup_isolation_project_usage_does_not_cross_vos(local, global_, p_a1, p_a2):
    # changing how VO-A's usage splits between P-A1 and P-A2 leaves every VO-A/VO-B order alone
    dev_a = deviation_tuple(FIG4, ["VO-A"], local, global_)[0]
    dev_b = deviation_tuple(FIG4, ["VO-B"], local, global_)[0]
    changed = dict(global_, **{"VO-A/P-A1": p_a1, "VO-A/P-A2": p_a2})

    def orders(g_usage):
        return [
            job_priority(FIG4, a, local, g_usage) > job_priority(FIG4, b, local, g_usage)
            for a in GROUPS_A
            for b in GROUPS_B
        ]

    if abs(dev_a - dev_b) > ISOLATION_GAP:
        assert orders(changed) == orders(global_)
        assert len(set(orders(global_))) == 1


def test_subgroup_isolation_breaks_for_close_deviations():
    # The base-200 "digits" dev+100 span 0..200, so deeper levels can outweigh a top-level
    # gap below ISOLATION_GAP (≈1.005 points): VO-A is less favored (+0.25 vs -0.25), yet a
    # VO-B job outranks a VO-A job. (Lexicographic tuples would not; the formula does.)
    local = {"VO-A": 2975, "VO-B": 7025}
    global_ = {"VO-A/P-A3": 100}  # P-A3 has all of VO-A's usage: -80; P-B1 none: +60, U-B12 +30
    assert deviation_tuple(FIG4, ["VO-A", "VO-A/P-A3"], local, global_) == [0.25, -80.0]
    assert deviation_tuple(FIG4, map_path(FIG4, "VO-B/P-B1/U-B12"), local, global_) == [-0.25, 60.0, 30.0]
    assert job_priority(FIG4, "VO-A/P-A3", local, global_) == 100.25 * 40_000 + 20 * 200 + 100 == 4_014_100
    assert job_priority(FIG4, "VO-B/P-B1/U-B12", local, global_) == 99.75 * 40_000 + 160 * 200 + 130 == 4_022_130
    assert ISOLATION_GAP == pytest.approx(1.005)


# ---------------------------------------------------------------------- usage (5.1)

NOW = 100.0
TIMELINE = [
    UsageRecord("VO-A/P-A1", start=0, end=30, procs=2, walltime=40),  # completed: 60
    UsageRecord("VO-B/P-B1/U-B11", start=50, end=90, procs=1, walltime=60),  # completed: 40
    UsageRecord("VO-B/P-B2", start=80, end=math.inf, procs=4, walltime=50),  # running 20 s
    UsageRecord("VO-A/P-A2", start=95, end=150, procs=1, walltime=100),  # ends after now: running 5 s
    UsageRecord("VO-A/P-A3", start=120, end=math.nan, procs=8, walltime=10),  # not started yet
]


def test_usage_approaches_by_hand():
    zero = {"VO-A/P-A3": 0.0}
    assert usage_of(TIMELINE, NOW, "historical") == {
        "VO-A": 60.0, "VO-A/P-A1": 60.0, "VO-A/P-A2": 0.0, **zero,
        "VO-B": 40.0, "VO-B/P-B1": 40.0, "VO-B/P-B1/U-B11": 40.0, "VO-B/P-B2": 0.0,
    }  # fmt: skip
    # active: + 4·(100-80) = 80 for P-B2, + 1·(100-95) = 5 for P-A2
    assert usage_of(TIMELINE, NOW, "active") == {
        "VO-A": 65.0, "VO-A/P-A1": 60.0, "VO-A/P-A2": 5.0, **zero,
        "VO-B": 120.0, "VO-B/P-B1": 40.0, "VO-B/P-B1/U-B11": 40.0, "VO-B/P-B2": 80.0,
    }  # fmt: skip
    # predictive: + the whole walltime: 4·50 = 200 for P-B2, 1·100 = 100 for P-A2
    assert usage_of(TIMELINE, NOW, "predictive") == {
        "VO-A": 160.0, "VO-A/P-A1": 60.0, "VO-A/P-A2": 100.0, **zero,
        "VO-B": 240.0, "VO-B/P-B1": 40.0, "VO-B/P-B1/U-B11": 40.0, "VO-B/P-B2": 200.0,
    }  # fmt: skip
    assert set(APPROACHES) == {"historical", "active", "predictive"}
    # at 1000 the job ending at 150 has completed; the one with end=inf still runs
    later = usage_of(TIMELINE[:4], 1000.0, "historical")
    assert later["VO-A"] == 60 + 55 and later["VO-B/P-B2"] == 0.0  # P-B2 still running (end inf)


def test_usage_windows_with_decay_by_hand():
    w = Windows(length=10, count=2, decay=0.5)
    # window 0 = [90, 100), window 1 = [80, 90) weighted 0.5; older is dropped
    # job 1 [0, 30): nothing. job 2 [50, 90): 10 s in window 1 -> 5.
    # job 3 (running since 80, 4 procs): active 4·(10 + 0.5·10) = 60; predictive 4·50 = 200.
    # job 4 (running since 95): active 5; predictive 100.
    assert usage_of(TIMELINE, NOW, "historical", w) == {
        "VO-A": 0.0, "VO-A/P-A1": 0.0, "VO-A/P-A2": 0.0, "VO-A/P-A3": 0.0,
        "VO-B": 5.0, "VO-B/P-B1": 5.0, "VO-B/P-B1/U-B11": 5.0, "VO-B/P-B2": 0.0,
    }  # fmt: skip
    active = usage_of(TIMELINE, NOW, "active", w)
    assert active["VO-B/P-B2"] == 60.0 and active["VO-B"] == 65.0 and active["VO-A"] == 5.0
    predictive = usage_of(TIMELINE, NOW, "predictive", w)
    assert predictive["VO-B/P-B2"] == 200.0 and predictive["VO-B"] == 205.0 and predictive["VO-A"] == 100.0
    # a completed job across three windows: [75, 97), 2 procs, decay 0.5:
    # 2·(7 + 0.5·10 + 0.25·5) = 26.5
    rec = [UsageRecord("X", start=75, end=97, procs=2, walltime=30)]
    assert usage_of(rec, NOW, "historical", Windows(10, 3, 0.5)) == {"X": 26.5}
    assert usage_of(rec, NOW, "historical", Windows(10, 2, 0.5)) == {"X": 24.0}
    assert usage_of(rec, NOW, "historical", Windows(10, 1, 0.5)) == {"X": 14.0}
    assert usage_of(rec, NOW, "historical") == {"X": 44.0}


def test_usage_errors():
    with pytest.raises(ValueError, match=r"approach: expected one of"):
        usage_of(TIMELINE, NOW, "fancy")
    with pytest.raises(ValueError, match=r"windows: count must be an integer ≥ 1"):
        usage_of(TIMELINE, NOW, "active", Windows(10, 0))
    with pytest.raises(ValueError, match=r"usage record 0 \('A'\): procs must be a positive integer"):
        usage_of([UsageRecord("A", 0, 1, 0, 1)], NOW, "active")
    with pytest.raises(ValueError, match=r"usage record 0 \('A'\): end 1 before start 5"):
        usage_of([UsageRecord("A", 5, 1, 1, 1)], NOW, "active")
    running_without_walltime = [UsageRecord("A", 0, math.inf, 1, math.nan)]
    assert usage_of(running_without_walltime, NOW, "active") == {"A": 100.0}
    with pytest.raises(ValueError, match=r"predictive usage needs the running job's walltime"):
        usage_of(running_without_walltime, NOW, "predictive")


def test_aggregate_adds_up_to_ancestors():
    fig4 = figure_4()
    got = aggregate({"VO-B/P-B1/U-B11": 3, "VO-B/P-B1": 2, "VO-A/P-A2": 7}, fig4)
    assert got["VO-B/P-B1"] == 5 and got["VO-B"] == 5 and got["VO-A"] == 7 and got["VO-B/P-B2"] == 0
    assert set(got) == set(entries(fig4))
    # the same numbers as usage_of, which aggregates by path prefix
    usage = usage_of(TIMELINE, NOW, "active")
    own = {"VO-A/P-A1": 60.0, "VO-A/P-A2": 5.0, "VO-B/P-B1/U-B11": 40.0, "VO-B/P-B2": 80.0}
    assert {k: v for k, v in aggregate(own, fig4).items() if k in usage} == usage
    with pytest.raises(ValueError, match=r"usage VO-C: no such entry in policy Resource"):
        aggregate({"VO-C": 1}, fig4)


def test_numpy_numbers_are_accepted():
    import numpy as np

    rec = [UsageRecord("VO-A/P-A1", np.float64(80.0), np.float64(np.inf), np.int32(3), np.float64(50.0))]
    assert usage_of(rec, np.float64(100.0), "active") == {"VO-A": 60.0, "VO-A/P-A1": 60.0}
    fig4 = figure_4()
    local = {"VO-A": np.int64(400), "VO-B": np.float64(600.0)}
    assert deviation_tuple(fig4, ["VO-A"], local, {}) == [-10.0]
