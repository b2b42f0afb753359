"""The provider's groups as handrail roles, and who a token names when a tokens file
and a provider serve side by side. Checking real tokens against a real provider is in
tests/transport/test_oauth_mcp.py and tests/dashboard/test_oidc_signin_browser.py."""

from __future__ import annotations

import pytest

from handrail.service.identity_provider import Provider, parse_roles
from handrail.service.people import People, digest

ISSUER = "https://idp.example.test/realms/eng"


def test_roles_name_groups_and_a_group_may_give_several_roles() -> None:
    groups = parse_roles(("lead=handrail-leads,admins", "qa=admins"))
    assert groups == {"handrail-leads": frozenset({"lead"}), "admins": frozenset({"lead", "qa"})}


@pytest.mark.parametrize("item", ["lead", "=leads", "lead=", " = "])
def test_a_roles_item_without_a_role_and_a_group_is_refused_naming_it(item: str) -> None:
    with pytest.raises(ValueError, match="expected ROLE=GROUP"):
        parse_roles((item,))


def test_a_person_is_subject_at_issuer_with_the_roles_of_their_known_groups_only() -> None:
    provider = Provider(ISSUER, "handrail", groups=parse_roles(("lead=leads",)))
    person = provider.person(
        {"sub": "u-42", "name": "Lena", "email": "l@x.test", "groups": ["leads", 7, "x"]}
    )
    assert person.id == "u-42@idp.example.test/realms/eng"
    assert (person.name, person.email, person.roles) == ("Lena", "l@x.test", frozenset({"lead"}))
    assert provider.roles_of(person.id) == frozenset({"lead"})
    assert provider.person({"sub": "u-43", "groups": "leads"}).roles == frozenset({"lead"})
    assert provider.roles_of("somebody-else") == frozenset()


def test_beside_a_provider_the_tokens_file_still_names_its_people_and_a_non_jwt_names_nobody() -> None:
    tokens = People(((digest("robot-token-0123456789"), "robot"),), ("agent",))
    people = Provider(ISSUER, "handrail", audience="https://h.test/mcp").with_tokens(tokens)
    assert people.credential("robot-token-0123456789") == ("robot", "agent")
    assert people.identify("robot-token-0123456789", scope="person") is None
    assert people.credential("not-a-jwt-and-nobody-s-token") is None
    assert people.resource_metadata() == "https://h.test/.well-known/oauth-protected-resource/mcp"
