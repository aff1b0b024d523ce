"""OVN: the Northbound/Southbound databases' connections and the names neutrino
gives its rows there, shared by the server's ``ovn`` mechanism driver and the
OVN metadata agent."""
