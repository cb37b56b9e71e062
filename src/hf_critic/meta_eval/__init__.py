"""Meta-evaluation maths and reports (issue-10 redesign home)."""
