"""Extensions that only announce a behaviour the API always has."""

from neutrino.definitions.base import Extension

FLAGS = (
    Extension("project-id", "project_id field enabled",
              "Extension that indicates that project_id field is enabled."),
    Extension("pagination", "Pagination support", "Extension that indicates that "
              "pagination is enabled."),
    Extension("sorting", "Sorting support", "Extension that indicates that sorting is "
              "enabled."),
    Extension("filter-validation", "Filter parameters validation",
              "Provides validation on filter parameters."),
    Extension("standard-attr-description", "standard-attr-description",
              "Extension to add descriptions to standard attributes"),
    Extension("standard-attr-revisions", "Resource revision numbers",
              "This extension will display the revision number of neutron resources."),
    Extension("revision-if-match", "If-Match constraints based on revision_number",
              "An update or delete sent with If-Match: revision_number=N happens only "
              "while the resource is at that revision (412 otherwise)."),
    Extension("standard-attr-timestamp", "Resource timestamps",
              "Adds created_at and updated_at fields to all Neutron resources that "
              "have Neutron standard attributes."),
    Extension("subnet_allocation", "Subnet Allocation", "Enables allocation of subnets "
              "from a subnet pool"),
    Extension("default-subnetpools", "Default Subnetpools",
              "Provides ability to mark and use a subnetpool as the default."),
    Extension("ip-substring-filtering", "IP address substring filtering",
              "Provides IP address substring filtering when listing ports"),
    Extension("empty-string-filtering", "Empty String Filtering Extension",
              "Allow filtering by attributes with empty string value"),
)
