"""Following the plan: per-step queue capacities, their application, and YuniKorn queue documents."""
