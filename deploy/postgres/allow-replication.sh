#!/bin/sh
# Run once by the postgres image on a new data directory: lets the compose `scale` profile's postgres-replica
# stream from this primary (pg_basebackup, then WAL) as the postgres user, with POSTGRES_PASSWORD.
set -e
echo "host replication postgres all scram-sha-256" >> "$PGDATA/pg_hba.conf"
