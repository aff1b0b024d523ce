"""Topic and namespace names shared by the server and the agents (Neutron's
names). Several APIs share a topic; each API's contract (methods, versions,
payloads, stubs) is in ``neutrino.rpc.contracts``."""

REPORTS = "q-reports-plugin"  # agents -> server: report_state
PLUGIN = "q-plugin"  # L2 agents -> server: device details, device up/down
L3_PLUGIN = "q-l3-plugin"  # L3 agents -> server: routers' sync data, statuses
FIREWALL_PLUGIN = "q-firewall-plugin"  # L3 agents -> server: firewall group statuses

# server -> every L2 agent (fanout)
PORT_UPDATE = "q-agent-notifier-port-update"
PORT_DELETE = "q-agent-notifier-port-delete"
NETWORK_UPDATE = "q-agent-notifier-network-update"
NETWORK_DELETE = "q-agent-notifier-network-delete"
SECURITY_GROUP_UPDATE = "q-agent-notifier-securitygroup-update"
L2POPULATION = "q-agent-notifier-l2population-update"  # where other hosts' ports are
L2_NOTIFICATIONS = (PORT_UPDATE, PORT_DELETE, NETWORK_UPDATE, NETWORK_DELETE,
                    SECURITY_GROUP_UPDATE)

DHCP_AGENT = "dhcp_agent"
L3_AGENT = "l3_agent"

# RPC namespaces on PLUGIN: DHCP agents' calls, the metadata agent's (Neutron's
# RPC_NAMESPACE_DHCP_PLUGIN and RPC_NAMESPACE_METADATA)
DHCP_NAMESPACE = "dhcp"
METADATA_NAMESPACE = "metadata"


# agents -> listeners (billing, telemetry): oslo-style notifications
NOTIFICATIONS = "notifications"
# packet logging: agents -> server (Neutron's topic and namespace), and the
# server -> every L2 agent when logs change (fanout)
LOGGING_PLUGIN = "logging-plugin"
LOGGING_NAMESPACE = "logging-plugin"
LOG_UPDATE = "q-agent-notifier-log-update"
# QoS: agents' extensions -> server (the policies' rules), and the server ->
# every agent when a policy's rules change (fanout)
QOS_PLUGIN = "q-qos-plugin"
QOS_POLICY_UPDATE = "q-agent-notifier-qos-policy-update"
# trunks: OVS agents -> server (Neutron's topic and namespace), and the server ->
# every L2 agent when a trunk's subports change or it goes (fanout)
TRUNK_PLUGIN = "trunk"
TRUNK_NAMESPACE = "trunk"
TRUNK_UPDATE = "q-agent-notifier-trunk-update"
# Local IPs: OVS agents' extension -> server (the associations of its ports),
# and the server -> every L2 agent when a port's associations change (fanout)
LOCAL_IP_PLUGIN = "q-local-ip-plugin"
LOCAL_IP_UPDATE = "q-agent-notifier-local-ip-update"
