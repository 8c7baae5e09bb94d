"""Tables and figures from run outputs."""
