"""Service plugins: the resources beyond networks, subnets and ports."""
