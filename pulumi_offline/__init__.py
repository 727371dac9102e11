"""pulumi_offline."""
