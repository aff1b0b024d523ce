"""address-group: named sets of CIDRs that security group rules may name as their
remote end (security-groups-remote-address-group)."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, Resource, attrs, standard_attrs


class AddressGroupNotFound(exc.NotFound):
    message = "Address group %(address_group_id)s could not be found."


class AddressGroupInUse(exc.InUse):
    message = ("Address group %(address_group_id)s is in use on one or more security group "
               "rules.")


class AddressesNotFound(exc.NotFound):
    message = "Addresses %(addresses)s not found in the address group %(address_group_id)s."


class AddressesAlreadyExist(exc.BadRequest):
    message = ("Addresses %(addresses)s already exist in the address group "
               "%(address_group_id)s.")


RESOURCE = Resource(
    hyphenated=True,
    name="address_group",
    collection="address_groups",
    not_found=AddressGroupNotFound,
    member_actions={"add_addresses": "add_address_group_addresses",
                    "remove_addresses": "remove_address_group_addresses"},
    attrs={
        **{k: a for k, a in standard_attrs().items() if k != "tags"},
        **attrs(Attr("addresses", allow_post=True, default=[], convert=v.none_to_empty_list,
                     validate=v.subnet_cidr_list, filter=False)),
    },
)

EXTENSIONS = (
    Extension("address-group", "Address group", "Support address group",
              updated="2020-07-15T10:00:00-00:00", resources=(RESOURCE,),
              required=("security-group",)),
    Extension("security-groups-remote-address-group",
              "Remote address group id field for security group rules",
              "Add new field of remote address group id in SG rules",
              updated="2020-08-25T10:00:00-00:00", required=("security-group",)),
)
