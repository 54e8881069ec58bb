"""`karpy simulate` and `karpy catalog`: one provisioning decision from YAML files, no cluster."""
