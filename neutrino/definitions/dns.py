"""dns-integration: ports get a DNS name and see the names of their addresses;
networks get a DNS domain.

Whether a port's name must fit the configured ``dns_domain`` depends on
configuration, so that check (``name_in_domain``) is the driver's; the
definition checks only the form of a name.
"""

from __future__ import annotations

import re
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions.base import Attr, Extension, attrs

DNS_NAME = "dns_name"
DNS_DOMAIN = "dns_domain"
DNS_ASSIGNMENT = "dns_assignment"
FQDN_MAX_LEN = 255
# Neutron's default dns_domain: with it, ports' dns_name is not used at all.
DEFAULT_DOMAIN = "openstacklocal."
_LABEL = re.compile(r"[a-z0-9-]{1,63}")
_DIGITS = re.compile(r"[0-9]+")


def to_case_insensitive(value: Any) -> str:
    if not isinstance(value, str):
        raise exc.InvalidInput(error_message=f"Input value {value} must be string type")
    return value.lower()


def _form_error(name: str) -> str | None:
    """Why ``name`` is no partially or fully qualified DNS name (RFC 1123, 952)."""
    trimmed = name[:-1] if name.endswith(".") else name
    if len(trimmed) > FQDN_MAX_LEN:
        return f"'{trimmed}' exceeds the {FQDN_MAX_LEN} character FQDN limit"
    labels = trimmed.split(".")
    for label in labels:
        if not label:
            return "Encountered an empty component"
        if label.startswith("-") or label.endswith("-"):
            return f"Name '{label}' must not start or end with a hyphen"
        if not _LABEL.fullmatch(label):
            return (f"Name '{label}' must be 1-63 characters long, each of which can only "
                    "be alphanumeric or a hyphen")
    if len(labels) > 1 and _DIGITS.fullmatch(labels[-1]):  # a top-level domain is not numeric
        return f"TLD '{labels[-1]}' must not be all numeric"
    return None


def check_form(name: str) -> str | None:
    """Neutron's dns_host_name check; an empty name is no name."""
    if not name:
        return None
    reason = _form_error(name)
    return f"'{name}' not a valid PQDN or FQDN. Reason: {reason}" if reason else None


def dns_domain(value: Any) -> str | None:
    if not value:
        return None
    if not value.endswith("."):
        return f"'{value}' is not a FQDN"
    error = check_form(value)
    if error:
        return error
    if len(value) > FQDN_MAX_LEN - 2:
        return (f"'{value}' contains {len(value)} characters. Adding a sub-domain will cause "
                f"it to exceed the maximum length of a FQDN of '{FQDN_MAX_LEN}'")
    return None


def absolute(domain: str) -> str:
    """The configured domain with its trailing dot, or '' for none."""
    return domain if not domain or domain.endswith(".") else f"{domain}."


def name_in_domain(name: str, domain: str, configured: str) -> str | None:
    """A port's name against the configured domain: a relative name must leave room
    for the domain, an absolute one must end in it."""
    suffix = f".{domain}" if domain else domain
    if not name.endswith("."):
        if len(name) + len(suffix) > FQDN_MAX_LEN:
            return (f"The dns_name passed is a PQDN and its size is '{len(name)}'. The "
                    f"dns_domain option in neutron.conf is set to {configured}, with a "
                    f"length of '{len(suffix)}'. When the two are concatenated to form a "
                    "FQDN (with a '.' at the end), the resulting length exceeds the "
                    f"maximum size of '{FQDN_MAX_LEN}'")
        return None
    if len(name) <= len(suffix) or not name.endswith(suffix):
        return ("The dns_name passed is a FQDN. Its higher level labels must be equal to "
                f"the dns_domain option in neutron.conf, that has been set to '{configured}'"
                ". It must also include one or more valid DNS labels to the left of "
                f"'{configured}'")
    return None


DOMAIN_PORTS = Extension(
    alias="dns-domain-ports",
    name="dns_domain for ports",
    description="A port may name a DNS domain of its own.",
    updated="2017-06-08T18:00:00-00:00",
    attributes={"ports": attrs(
        Attr(DNS_DOMAIN, allow_post=True, allow_put=True, default="",
             convert=to_case_insensitive, validate=dns_domain, filter=False))},
    required=("dns-integration",),
)

EXTENSION = Extension(
    alias="dns-integration",
    name="DNS Integration",
    description="Provides integration with DNS.",
    updated="2015-08-15T18:00:00-00:00",
    attributes={
        "ports": attrs(
            Attr(DNS_NAME, allow_post=True, allow_put=True, default="",
                 convert=to_case_insensitive, validate=check_form, filter=False),
            Attr(DNS_ASSIGNMENT, filter=False),
        ),
        "networks": attrs(
            Attr(DNS_DOMAIN, allow_post=True, allow_put=True, default="",
                 convert=to_case_insensitive, validate=dns_domain, filter=False),
        ),
    },
)
