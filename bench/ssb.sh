#!/usr/bin/env bash
# bench/ssb.sh: the Star Schema Benchmark (O'Neil, O'Neil, Chen and Revilak,
# 2009), its 13 queries Q1.1-Q4.3 in their published SQL, over the same data
# in five configurations, measured side by side in one run.
#
#   sudo bash bench/ssb.sh
#   AMQ_SSB_SF=0.05 AMQ_SSB_RUNS=3 sudo bash bench/ssb.sh     # a quick check
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster with the library in session_preload_libraries (one core
# per query, JIT off, statement_timeout 120 s (AMQ_SSB_TIMEOUT): a query that
# would run longer is recorded as a timeout, never waited for) and generates the data in SQL at
# scale factor SF (AMQ_SSB_SF, default 1), deterministically (hashint8extended
# of a row's number and a seed per column, no random()):
#
#   date       every day of 1992-01-01 .. 1998-12-31, 2,557 (the spec's
#              count, 2,556, leaves out a leap day or the last day; no row
#              of lineorder is dated in the last five months): d_datekey
#              YYYYMMDD, d_year, d_yearmonthnum, d_yearmonth 'Dec1997',
#              d_weeknuminyear (day of year - 1) / 7 + 1, and the spec's
#              other columns
#   customer   30,000 * SF; c_nation uniform over TPC-H's 25 nations,
#              c_region its region, c_city the nation's first 9 letters
#              (space-padded) and a digit 0-9 ('UNITED KI1')
#   supplier   2,000 * SF, s_nation, s_region, s_city likewise
#   part       200,000 * floor(1 + log2 SF) (200,000 * SF below SF 1, where
#              the formula gives no rows); p_mfgr 'MFGR#m' (m 1-5), p_category
#              'MFGR#mc' (c 1-5), p_brand1 'MFGR#mcb' (b 1-40), uniform
#   lineorder  1,500,000 * SF orders of 1-7 lines (4 on average: about
#              6,000,000 * SF rows); order dates spread evenly over
#              1992-01-01 .. 1998-08-02 (the spec's range, the last 151 days
#              left out), orders numbered in date order and inserted in that
#              order, as an append-mostly fact would be; per order lo_custkey
#              uniform; per line lo_partkey and lo_suppkey uniform,
#              lo_quantity 1-50, lo_discount 0-10, lo_tax 0-8;
#              lo_extendedprice = quantity * the part's retail price (TPC-H's
#              formula, in cents), lo_revenue = extendedprice * (100 -
#              discount) / 100, lo_supplycost = 6/10 of the retail price;
#              lo_ordtotalprice is a value in its domain, not the sum of the
#              order's lines (no query reads it).  Range-partitioned by
#              lo_orderdate into 7 partitions, one a year.
#
# The dimensions have their primary keys.  The fact is loaded three times,
# with the same rows in the same physical order, into three schemas that the
# queries reach through search_path:
#
#   ssb_plain  no index on the fact
#   ssb_btree  btrees on lo_custkey, lo_suppkey, lo_partkey, lo_orderdate
#   ssb_amq    amqfilter indexes on the same four columns (default options;
#              AMQ_SSB_AMQ_WITH sets storage parameters, e.g.
#              "pages_per_range = 32")
#
# and each query runs in five configurations:
#
#   1 plain      ssb_plain, amqfilter.join_filter off
#   2 btree      ssb_btree, join filter off
#   3 amq        ssb_amq, join filter off
#   4 amq+jf     ssb_amq, join filter on
#   5 plain+jf   ssb_plain, join filter on
#
# For each query: its rows in each configuration (sorted, md5; all five must
# agree), its plan in each (EXPLAIN ANALYZE: the joins from the top down, the
# fact's indexes used, runtime filters, partition scans skipped by a filter
# index), and its time in each: after those two runs of every configuration
# (they warm it up), AMQ_SSB_RUNS rounds (default 5) that each run every configuration once,
# starting from another one each round (as test/lib.sh's interleaved_rounds
# does), the median of EXPLAIN (ANALYZE, TIMING OFF)'s "Execution Time" (or,
# with AMQ_SSB_TIMER=client, of the time psql's \timing sees without EXPLAIN).
# A configuration that times out is recorded as a timeout and not run again
# for that query.  Then the ratio of configurations 3 and 4 to the better of
# 1 and 2 (PostgreSQL's best with or without a btree), and geometric means
# over the queries.  Last, the indexes' sizes, and amqfilter_index_info's
# entries and "everywhere" entries.  Prints the results and writes the "Star
# Schema Benchmark" section of bench/RESULTS.md (bench/run.sh keeps it);
# exits non-zero if a query timed out or its rows differ between
# configurations.
#
# Environment: AMQ_SSB_SF (default 1), AMQ_SSB_RUNS (default 5),
# AMQ_SSB_TIMEOUT (the statement_timeout in seconds, default 120),
# AMQ_SSB_TIMER (exec or client, default exec), AMQ_SSB_AMQ_WITH (the
# amqfilter indexes' WITH (...), default none), AMQ_SSB_SHARED_BUFFERS
# (default 4GB: at SF 1 the three copies of the fact and the btrees take
# about 2.5 GB),
# AMQ_BENCH_SKIP_BUILD=1.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

SF=${AMQ_SSB_SF:-1}
RUNS=${AMQ_SSB_RUNS:-5}
TIMER=${AMQ_SSB_TIMER:-exec}
AMQ_WITH=${AMQ_SSB_AMQ_WITH:-}
SHARED_BUFFERS=${AMQ_SSB_SHARED_BUFFERS:-4GB}
TIMEOUT_S=${AMQ_SSB_TIMEOUT:-120}
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Star Schema Benchmark'

[[ $SF =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v s="$SF" 'BEGIN { exit !(s >= 0.001) }' \
	|| die "AMQ_SSB_SF must be a number >= 0.001, not '$SF'"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "AMQ_SSB_RUNS must be a whole number >= 1"
[[ $TIMEOUT_S =~ ^[0-9]+$ ]] && [ "$TIMEOUT_S" -ge 1 ] \
	|| die "AMQ_SSB_TIMEOUT must be a whole number of seconds >= 1"
[ "$TIMER" = exec ] || [ "$TIMER" = client ] || die "AMQ_SSB_TIMER must be exec or client"
[[ $AMQ_WITH =~ ^[a-z_]+\ *=\ *[0-9.]+(,\ *[a-z_]+\ *=\ *[0-9.]+)*$ ]] || [ -z "$AMQ_WITH" ] \
	|| die "AMQ_SSB_AMQ_WITH must be storage parameters such as 'pages_per_range = 32'"

# row counts at SF
CUSTOMERS=$(awk -v s="$SF" 'BEGIN { printf "%d", 30000 * s + 0.5 }')
SUPPLIERS=$(awk -v s="$SF" 'BEGIN { printf "%d", 2000 * s + 0.5 }')
PARTS=$(awk -v s="$SF" 'BEGIN { if (s >= 1) printf "%d", 200000 * int(1 + log(s) / log(2) + 1e-9)
	else printf "%d", 200000 * s + 0.5 }')
ORDERS=$(awk -v s="$SF" 'BEGIN { printf "%d", 1500000 * s + 0.5 }')
[ "$CUSTOMERS" -ge 1 ] && [ "$SUPPLIERS" -ge 1 ] && [ "$PARTS" -ge 1 ] \
	|| die "AMQ_SSB_SF=$SF leaves a table without rows"

CONFIGS=(1 2 3 4 5)
declare -A CONFIG_NAME=([1]=plain [2]=btree [3]=amq [4]="amq+jf" [5]="plain+jf")
declare -A CONFIG_SET=(
	[1]="SET search_path = ssb_plain, public; SET amqfilter.join_filter = off;"
	[2]="SET search_path = ssb_btree, public; SET amqfilter.join_filter = off;"
	[3]="SET search_path = ssb_amq, public; SET amqfilter.join_filter = off;"
	[4]="SET search_path = ssb_amq, public; SET amqfilter.join_filter = on;"
	[5]="SET search_path = ssb_plain, public; SET amqfilter.join_filter = on;"
)

# The 13 queries as the paper gives them.
QUERIES=(1.1 1.2 1.3 2.1 2.2 2.3 3.1 3.2 3.3 3.4 4.1 4.2 4.3)
declare -A Q
Q[1.1]="select sum(lo_extendedprice*lo_discount) as revenue
from lineorder, date
where lo_orderdate = d_datekey
and d_year = 1993
and lo_discount between 1 and 3
and lo_quantity < 25"
Q[1.2]="select sum(lo_extendedprice*lo_discount) as revenue
from lineorder, date
where lo_orderdate = d_datekey
and d_yearmonthnum = 199401
and lo_discount between 4 and 6
and lo_quantity between 26 and 35"
Q[1.3]="select sum(lo_extendedprice*lo_discount) as revenue
from lineorder, date
where lo_orderdate = d_datekey
and d_weeknuminyear = 6
and d_year = 1994
and lo_discount between 5 and 7
and lo_quantity between 26 and 35"
Q[2.1]="select sum(lo_revenue), d_year, p_brand1
from lineorder, date, part, supplier
where lo_orderdate = d_datekey
and lo_partkey = p_partkey
and lo_suppkey = s_suppkey
and p_category = 'MFGR#12'
and s_region = 'AMERICA'
group by d_year, p_brand1
order by d_year, p_brand1"
Q[2.2]="select sum(lo_revenue), d_year, p_brand1
from lineorder, date, part, supplier
where lo_orderdate = d_datekey
and lo_partkey = p_partkey
and lo_suppkey = s_suppkey
and p_brand1 between 'MFGR#2221' and 'MFGR#2228'
and s_region = 'ASIA'
group by d_year, p_brand1
order by d_year, p_brand1"
Q[2.3]="select sum(lo_revenue), d_year, p_brand1
from lineorder, date, part, supplier
where lo_orderdate = d_datekey
and lo_partkey = p_partkey
and lo_suppkey = s_suppkey
and p_brand1 = 'MFGR#2239'
and s_region = 'EUROPE'
group by d_year, p_brand1
order by d_year, p_brand1"
Q[3.1]="select c_nation, s_nation, d_year, sum(lo_revenue) as revenue
from customer, lineorder, supplier, date
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_orderdate = d_datekey
and c_region = 'ASIA'
and s_region = 'ASIA'
and d_year >= 1992 and d_year <= 1997
group by c_nation, s_nation, d_year
order by d_year asc, revenue desc"
Q[3.2]="select c_city, s_city, d_year, sum(lo_revenue) as revenue
from customer, lineorder, supplier, date
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_orderdate = d_datekey
and c_nation = 'UNITED STATES'
and s_nation = 'UNITED STATES'
and d_year >= 1992 and d_year <= 1997
group by c_city, s_city, d_year
order by d_year asc, revenue desc"
Q[3.3]="select c_city, s_city, d_year, sum(lo_revenue) as revenue
from customer, lineorder, supplier, date
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_orderdate = d_datekey
and (c_city='UNITED KI1' or c_city='UNITED KI5')
and (s_city='UNITED KI1' or s_city='UNITED KI5')
and d_year >= 1992 and d_year <= 1997
group by c_city, s_city, d_year
order by d_year asc, revenue desc"
Q[3.4]="select c_city, s_city, d_year, sum(lo_revenue) as revenue
from customer, lineorder, supplier, date
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_orderdate = d_datekey
and (c_city='UNITED KI1' or c_city='UNITED KI5')
and (s_city='UNITED KI1' or s_city='UNITED KI5')
and d_yearmonth = 'Dec1997'
group by c_city, s_city, d_year
order by d_year asc, revenue desc"
Q[4.1]="select d_year, c_nation, sum(lo_revenue - lo_supplycost) as profit
from date, customer, supplier, part, lineorder
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_partkey = p_partkey
and lo_orderdate = d_datekey
and c_region = 'AMERICA'
and s_region = 'AMERICA'
and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')
group by d_year, c_nation
order by d_year, c_nation"
Q[4.2]="select d_year, s_nation, p_category, sum(lo_revenue - lo_supplycost) as profit
from date, customer, supplier, part, lineorder
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_partkey = p_partkey
and lo_orderdate = d_datekey
and c_region = 'AMERICA'
and s_region = 'AMERICA'
and (d_year = 1997 or d_year = 1998)
and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')
group by d_year, s_nation, p_category
order by d_year, s_nation, p_category"
Q[4.3]="select d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) as profit
from date, customer, supplier, part, lineorder
where lo_custkey = c_custkey
and lo_suppkey = s_suppkey
and lo_partkey = p_partkey
and lo_orderdate = d_datekey
and c_region = 'AMERICA'
and s_nation = 'UNITED STATES'
and (d_year = 1997 or d_year = 1998)
and p_category = 'MFGR#14'
group by d_year, s_city, p_brand1
order by d_year, s_city, p_brand1"

bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" "max_parallel_workers_per_gather = 0" \
	"shared_buffers = '$SHARED_BUFFERS'" "max_wal_size = '8GB'" "checkpoint_timeout = '1h'" \
	"session_preload_libraries = 'amqfilter'"
# q: psql for the load and the checks, which no statement_timeout stops
q() { PGOPTIONS='-c statement_timeout=0' run_psql -q -At "$@"; }
# step NAME [PSQL_ARGS...]: a load step (the SQL on standard input without
# PSQL_ARGS), timed
declare -A LOAD_S
LOAD_ORDER=()
step() {
	local name=$1 start=$SECONDS
	shift
	[ $# -gt 0 ] || set -- -f -
	log "load: $name"
	q "$@"
	LOAD_S[$name]=$((SECONDS - start))
	LOAD_ORDER+=("$name")
}

# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

LOAD_START=$SECONDS
q -c "CREATE EXTENSION amqfilter"
# ssb_u(x, seed, n): a number in 0 .. n-1 drawn from the row number x, one
# seed per column (an SQL function PostgreSQL inlines)
q <<-'SQL'
	CREATE FUNCTION ssb_u(x int8, seed int8, n int8) RETURNS int8
		LANGUAGE sql IMMUTABLE PARALLEL SAFE
		AS 'SELECT (hashint8extended(x, seed) & 9223372036854775807) % n';
	CREATE TABLE ssb_region (r_regionkey int PRIMARY KEY, r_name text NOT NULL);
	INSERT INTO ssb_region VALUES (0, 'AFRICA'), (1, 'AMERICA'), (2, 'ASIA'), (3, 'EUROPE'),
		(4, 'MIDDLE EAST');
	CREATE TABLE ssb_nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL,
		n_regionkey int NOT NULL REFERENCES ssb_region);
	INSERT INTO ssb_nation VALUES (0, 'ALGERIA', 0), (1, 'ARGENTINA', 1), (2, 'BRAZIL', 1),
		(3, 'CANADA', 1), (4, 'EGYPT', 4), (5, 'ETHIOPIA', 0), (6, 'FRANCE', 3),
		(7, 'GERMANY', 3), (8, 'INDIA', 2), (9, 'INDONESIA', 2), (10, 'IRAN', 4),
		(11, 'IRAQ', 4), (12, 'JAPAN', 2), (13, 'JORDAN', 4), (14, 'KENYA', 0),
		(15, 'MOROCCO', 0), (16, 'MOZAMBIQUE', 0), (17, 'PERU', 1), (18, 'CHINA', 2),
		(19, 'ROMANIA', 3), (20, 'SAUDI ARABIA', 4), (21, 'VIETNAM', 2), (22, 'RUSSIA', 3),
		(23, 'UNITED KINGDOM', 3), (24, 'UNITED STATES', 1);
SQL

step dimensions <<-SQL
	CREATE TABLE date AS
	SELECT to_char(d, 'YYYYMMDD')::int AS d_datekey,
	       to_char(d, 'FMMonth FMDD, YYYY') AS d_date,
	       to_char(d, 'FMDay') AS d_dayofweek,
	       to_char(d, 'FMMonth') AS d_month,
	       extract(year FROM d)::int AS d_year,
	       to_char(d, 'YYYYMM')::int AS d_yearmonthnum,
	       to_char(d, 'MonYYYY') AS d_yearmonth,
	       extract(dow FROM d)::int + 1 AS d_daynuminweek,
	       extract(day FROM d)::int AS d_daynuminmonth,
	       extract(doy FROM d)::int AS d_daynuminyear,
	       extract(month FROM d)::int AS d_monthnuminyear,
	       (extract(doy FROM d)::int - 1) / 7 + 1 AS d_weeknuminyear,
	       CASE WHEN extract(month FROM d) = 12 THEN 'Christmas'
	            WHEN extract(month FROM d) IN (6, 7, 8) THEN 'Summer'
	            WHEN extract(month FROM d) IN (1, 2) THEN 'Winter'
	            WHEN extract(month FROM d) IN (3, 4, 5) THEN 'Spring'
	            ELSE 'Fall' END AS d_sellingseason,
	       extract(dow FROM d) = 6 AS d_lastdayinweekfl,
	       extract(day FROM d + 1) = 1 AS d_lastdayinmonthfl,
	       to_char(d, 'MMDD') IN ('0101', '0704', '1225') AS d_holidayfl,
	       extract(isodow FROM d) < 6 AS d_weekdayfl
	  FROM generate_series(date '1992-01-01', date '1998-12-31', interval '1 day') g,
	       LATERAL (SELECT g::date AS d) x;
	ALTER TABLE date ADD PRIMARY KEY (d_datekey);

	CREATE TABLE customer AS
	SELECT k::int AS c_custkey,
	       'Customer#' || lpad(k::text, 9, '0') AS c_name,
	       substr(md5('c' || k), 1, 10 + ssb_u(k, 5, 16)::int) AS c_address,
	       rpad(substr(n.n_name, 1, 9), 9) || ssb_u(k, 2, 10) AS c_city,
	       n.n_name AS c_nation,
	       r.r_name AS c_region,
	       (10 + n.n_nationkey) || '-' || (100 + ssb_u(k, 3, 900)) || '-'
	         || (100 + ssb_u(k, 6, 900)) || '-' || (1000 + ssb_u(k, 7, 9000)) AS c_phone,
	       (ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])
	         [1 + ssb_u(k, 4, 5)] AS c_mktsegment
	  FROM generate_series(1, $CUSTOMERS) k
	  JOIN ssb_nation n ON n.n_nationkey = ssb_u(k, 1, 25)
	  JOIN ssb_region r ON r.r_regionkey = n.n_regionkey;
	ALTER TABLE customer ADD PRIMARY KEY (c_custkey);

	CREATE TABLE supplier AS
	SELECT k::int AS s_suppkey,
	       'Supplier#' || lpad(k::text, 9, '0') AS s_name,
	       substr(md5('s' || k), 1, 10 + ssb_u(k, 15, 16)::int) AS s_address,
	       rpad(substr(n.n_name, 1, 9), 9) || ssb_u(k, 12, 10) AS s_city,
	       n.n_name AS s_nation,
	       r.r_name AS s_region,
	       (10 + n.n_nationkey) || '-' || (100 + ssb_u(k, 13, 900)) || '-'
	         || (100 + ssb_u(k, 16, 900)) || '-' || (1000 + ssb_u(k, 17, 9000)) AS s_phone
	  FROM generate_series(1, $SUPPLIERS) k
	  JOIN ssb_nation n ON n.n_nationkey = ssb_u(k, 11, 25)
	  JOIN ssb_region r ON r.r_regionkey = n.n_regionkey;
	ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);

	CREATE TABLE part AS
	SELECT k::int AS p_partkey,
	       (ARRAY['almond', 'antique', 'aquamarine', 'azure', 'beige', 'bisque', 'black',
	              'blanched', 'blue', 'blush', 'brown', 'burlywood', 'burnished',
	              'chartreuse', 'chiffon', 'chocolate', 'coral', 'cornflower', 'cornsilk',
	              'cream', 'cyan', 'dark', 'deep', 'dim', 'dodger', 'drab', 'firebrick',
	              'floral', 'forest', 'frosted', 'gainsboro', 'ghost', 'goldenrod', 'green',
	              'grey', 'honeydew', 'hot', 'indian', 'ivory', 'khaki', 'lace', 'lavender',
	              'lawn', 'lemon', 'light', 'lime', 'linen', 'magenta', 'maroon', 'medium',
	              'metallic', 'midnight', 'mint', 'misty', 'moccasin', 'navajo', 'navy',
	              'olive', 'orange', 'orchid', 'pale', 'papaya', 'peach', 'peru', 'pink',
	              'plum', 'powder', 'puff', 'purple', 'red', 'rose', 'rosy', 'royal',
	              'saddle', 'salmon', 'sandy', 'seashell', 'sienna', 'sky', 'slate', 'smoke',
	              'snow', 'spring', 'steel', 'tan', 'thistle', 'tomato', 'turquoise',
	              'violet', 'wheat', 'white', 'yellow'])[1 + ssb_u(k, 20, 92)] AS p_color,
	       'MFGR#' || m AS p_mfgr,
	       'MFGR#' || m || c AS p_category,
	       'MFGR#' || m || c || b AS p_brand1,
	       (ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])[1 + ssb_u(k, 21, 6)]
	         || ' ' || (ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])[1 + ssb_u(k, 22, 5)]
	         || ' ' || (ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'])[1 + ssb_u(k, 23, 5)] AS p_type,
	       1 + ssb_u(k, 24, 50)::int AS p_size,
	       (ARRAY['SM', 'LG', 'MED', 'JUMBO', 'WRAP'])[1 + ssb_u(k, 25, 5)]
	         || ' ' || (ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'])[1 + ssb_u(k, 26, 8)]
	         AS p_container
	  FROM generate_series(1, $PARTS) k,
	       LATERAL (SELECT 1 + ssb_u(k, 27, 5) AS m, 1 + ssb_u(k, 28, 5) AS c,
	                       1 + ssb_u(k, 29, 40) AS b OFFSET 0) x;
	ALTER TABLE part ADD COLUMN p_name text;
	UPDATE part SET p_name = p_color || ' ' || (ARRAY['almond', 'azure', 'blush', 'coral',
	       'khaki', 'linen', 'olive', 'peach', 'snow', 'wheat'])[1 + ssb_u(p_partkey, 30, 10)];
	ALTER TABLE part ADD PRIMARY KEY (p_partkey);
SQL

# the fact, partitioned by year, in each schema
for s in ssb_plain ssb_btree ssb_amq; do
	q <<-SQL
		CREATE SCHEMA $s;
		CREATE UNLOGGED TABLE $s.lineorder (
			lo_orderkey int8 NOT NULL,
			lo_linenumber int NOT NULL,
			lo_custkey int NOT NULL,
			lo_partkey int NOT NULL,
			lo_suppkey int NOT NULL,
			lo_orderdate int NOT NULL,
			lo_orderpriority text NOT NULL,
			lo_shippriority text NOT NULL,
			lo_quantity int NOT NULL,
			lo_extendedprice int NOT NULL,
			lo_ordtotalprice int NOT NULL,
			lo_discount int NOT NULL,
			lo_revenue int NOT NULL,
			lo_supplycost int NOT NULL,
			lo_tax int NOT NULL,
			lo_commitdate int NOT NULL,
			lo_shipmode text NOT NULL
		) PARTITION BY RANGE (lo_orderdate);
		DO \$\$
		BEGIN
			FOR y IN 1992..1998 LOOP
				EXECUTE format('CREATE UNLOGGED TABLE $s.lineorder_%s PARTITION OF $s.lineorder
					FOR VALUES FROM (%s) TO (%s)', y, y * 10000 + 101, (y + 1) * 10000 + 101);
			END LOOP;
		END \$\$;
	SQL
done

# Order o (0-based) of ORDERS: its date the (o * DAYS / ORDERS)-th of the DAYS
# days, so that orders are numbered, and rows inserted, in date order; its
# lines 1 .. 1 + u(o, 40, 7).  Line x = 8 * o + line draws its own columns.
# The OFFSET 0 subqueries keep each hash computed once a row.
DAYS_SQL="((date '1998-12-31' - 151) - date '1992-01-01' + 1)"
step "lineorder (ssb_plain)" <<-SQL
	INSERT INTO ssb_plain.lineorder
	SELECT okey, line, custkey, partkey, suppkey, orderdate, priority, '0', quantity,
	       quantity * price, (total % 50000000)::int, discount,
	       (quantity::int8 * price * (100 - discount) / 100)::int,
	       6 * price / 10, tax,
	       to_char(odate + commitdays, 'YYYYMMDD')::int, shipmode
	  FROM (SELECT okey, line, custkey, partkey, suppkey, orderdate, odate, priority, quantity,
	               discount, tax, commitdays, shipmode, total,
	               90000 + ((partkey / 10) % 20001) + 100 * (partkey % 1000) AS price
	          FROM (SELECT o.*, l AS line,
	                       1 + ssb_u(8 * o.o + l, 41, $PARTS)::int AS partkey,
	                       1 + ssb_u(8 * o.o + l, 42, $SUPPLIERS)::int AS suppkey,
	                       1 + ssb_u(8 * o.o + l, 43, 50)::int AS quantity,
	                       ssb_u(8 * o.o + l, 44, 11)::int AS discount,
	                       ssb_u(8 * o.o + l, 45, 9)::int AS tax,
	                       30 + ssb_u(8 * o.o + l, 46, 61)::int AS commitdays,
	                       (ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])
	                         [1 + ssb_u(8 * o.o + l, 47, 7)] AS shipmode
	                  FROM (SELECT o, o + 1 AS okey, odate,
	                               to_char(odate, 'YYYYMMDD')::int AS orderdate,
	                               1 + ssb_u(o, 40, 7)::int AS nlines,
	                               1 + ssb_u(o, 48, $CUSTOMERS)::int AS custkey,
	                               (ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECI', '5-LOW'])
	                                 [1 + ssb_u(o, 49, 5)] AS priority,
	                               100000 + ssb_u(o, 50, 50000000) AS total
	                          FROM generate_series(0::int8, $((ORDERS - 1))) o,
	                               LATERAL (SELECT date '1992-01-01'
	                                               + (o * $DAYS_SQL / $ORDERS)::int AS odate) d
	                        OFFSET 0) o,
	                       generate_series(1, o.nlines) l
	                OFFSET 0) r) p
SQL
# the same rows, in the same order, for the other two schemas
step "lineorder (copies)" \
	-c "INSERT INTO ssb_btree.lineorder SELECT * FROM ssb_plain.lineorder" \
	-c "INSERT INTO ssb_amq.lineorder SELECT * FROM ssb_plain.lineorder"
WITH_AMQ=
[ -z "$AMQ_WITH" ] || WITH_AMQ="WITH ($AMQ_WITH)"
KEYS=(lo_custkey lo_suppkey lo_partkey lo_orderdate)
for k in "${KEYS[@]}"; do
	BTREE_SQL+=(-c "CREATE INDEX lineorder_${k}_btree ON ssb_btree.lineorder ($k)")
	AMQ_SQL+=(-c "CREATE INDEX lineorder_${k}_amq ON ssb_amq.lineorder USING amqfilter ($k) $WITH_AMQ")
done
step "btree indexes" "${BTREE_SQL[@]}"
step "amqfilter indexes" "${AMQ_SQL[@]}"
step "vacuum analyze" -c "VACUUM ANALYZE"
LOAD_TOTAL=$((SECONDS - LOAD_START))

declare -A R
R[lineorder]=$(q -c "SELECT count(*) FROM ssb_plain.lineorder")
R[dates]=$(q -c "SELECT count(*) FROM date")
R[fact_mb]=$(q -c "SELECT round(sum(pg_relation_size(relid)) / 1048576.0)
	FROM pg_partition_tree('ssb_plain.lineorder')")
# the copies: the same rows in the same blocks of the same partitions
LAYOUT_SQL="SELECT string_agg(c.relname || ':' || pg_relation_size(c.oid), ',' ORDER BY c.relname)
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relkind = 'r' AND c.relname LIKE 'lineorder%' AND n.nspname ="
CHECKSUM_SQL="SELECT count(*) || ':' || sum(hashtext(l::text)) FROM"
R[layout]=$(q -c "$LAYOUT_SQL 'ssb_plain'")
R[checksum]=$(q -c "$CHECKSUM_SQL ssb_plain.lineorder l")
for s in ssb_btree ssb_amq; do
	[ "$(q -c "$LAYOUT_SQL '$s'")" = "${R[layout]}" ] \
		|| die "$s.lineorder's partitions differ from ssb_plain.lineorder's"
	[ "$(q -c "$CHECKSUM_SQL $s.lineorder l")" = "${R[checksum]}" ] \
		|| die "$s.lineorder's rows differ from ssb_plain.lineorder's"
done
log "loaded in ${LOAD_TOTAL}s: ${R[lineorder]} lineorder rows (${R[fact_mb]} MB a copy)"

# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------

# psql_sets ARGS...: psql with the SETs of the last leading_sets call, then
# ARGS; prints the output, or "timeout" with status 3 when a statement ran
# past the statement_timeout; any other error prints it and returns 1.
ERR_FILE=$AMQ_CLUSTER_DIR/psql.err
psql_sets() {
	local out
	if ! out=$(run_psql -q -At "${SQL_SETUP[@]}" "$@" 2>"$ERR_FILE"); then
		if grep -q 'statement timeout' "$ERR_FILE"; then
			echo timeout
			return 3
		fi
		cat "$ERR_FILE" >&2
		return 1
	fi
	printf '%s\n' "$out"
}

# ssb_ms SQL: one time of SQL in ms (as exec_ms or client_ms measure it), or
# "timeout"
ssb_ms() {
	local out status=0
	leading_sets "$1"
	if [ "$TIMER" = client ]; then
		out=$(psql_sets -c '\timing on' -c "$SQL_BODY") || status=$?
		[ "$status" -ne 3 ] || { echo timeout; return; }
		[ "$status" -eq 0 ] || die "failed: $1"
		out=$(sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' <<<"$out" | tail -n 1)
	else
		out=$(psql_sets -c "EXPLAIN (ANALYZE, TIMING OFF) $SQL_BODY") || status=$?
		[ "$status" -ne 3 ] || { echo timeout; return; }
		[ "$status" -eq 0 ] || die "failed: $1"
		out=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out")
	fi
	[ -n "$out" ] || die "no time reported for: $1"
	echo "$out"
}

# plan_shape: a short summary of the EXPLAIN ANALYZE text on standard input:
# the joins from the top down (HJ, NL, MJ); "ix" and the fact's columns whose
# index is used, "pk" when a dimension's primary key is; "rf" and the fact's
# columns a runtime join filter tests; "skipped S/P" when a filter index
# skipped S of the P scans of the fact's partitions in the plan (a runtime
# filter's "Skipped by Filter Index", or an AmqFilter Append's "Partition
# Scans Skipped", counted over the rescans of a nested loop against its
# "Partition Scans Probed"); "ranges B/T" for the blocks of T a runtime filter
# read in the ranges the index returned; filters that stopped testing.
plan_shape() {
	awk '
		function add(list, item) {
			return index(" " list " ", " " item " ") ? list : (list == "" ? item : list " " item)
		}
		/Hash Join/ { joins = joins (joins == "" ? "" : ">") "HJ" }
		/Nested Loop/ { joins = joins (joins == "" ? "" : ">") "NL" }
		/Merge Join/ { joins = joins (joins == "" ? "" : ">") "MJ" }
		/(Index Scan|Index Only Scan) using |Bitmap Index Scan on / {
			if (match($0, /lo_[a-z]+/)) ix = add(ix, substr($0, RSTART + 3, RLENGTH - 3))
			else pk = 1
		}
		/Runtime Filter: rf[0-9]+ \(.*lo_[a-z]+/ {
			match($0, /lo_[a-z]+/); rf = add(rf, substr($0, RSTART + 3, RLENGTH - 3))
		}
		!/Bitmap Index Scan/ && / on lineorder_[0-9]+( |$)/ { scans++ }
		/Skipped by Filter Index: [0-9]+ of [0-9]+ scans/ {
			match($0, /[0-9]+ of/); skipped += substr($0, RSTART, RLENGTH - 3)
		}
		/Partition Scans Probed: [0-9]+/ { match($0, /[0-9]+$/); probed += substr($0, RSTART) }
		/Partition Scans Skipped: [0-9]+/ { match($0, /[0-9]+$/); append_skipped += substr($0, RSTART) }
		/Blocks Read by Filter Index Ranges: [0-9]+ of [0-9]+/ {
			match($0, /[0-9]+ of [0-9]+/); split(substr($0, RSTART, RLENGTH), f, " of ")
			blocks += f[1]; table_blocks += f[2]
		}
		/Runtime Filter Stopped/ { stopped++ }
		END {
			s = (joins == "" ? "scan" : joins)
			if (ix != "") s = s "; ix " ix
			if (pk) s = s "; pk"
			if (rf != "") s = s "; rf " rf
			if (skipped) s = s "; skipped " skipped "/" scans
			if (append_skipped) s = s "; skipped " append_skipped "/" probed
			if (table_blocks) s = s "; ranges " blocks "/" table_blocks
			if (stopped) s = s "; " stopped " stopped"
			print s
		}'
}

declare -A T MD5 ROWS PLAN REF SAME
TIMEOUTS=0
MISMATCHES=0
for qn in "${QUERIES[@]}"; do
	log "Q$qn: rows and plans"
	for c in "${CONFIGS[@]}"; do
		leading_sets "${CONFIG_SET[$c]} ${Q[$qn]}"
		# the rows (sorted: the queries' ORDER BY may leave ties), then the plan
		status=0
		out=$(psql_sets -c "$SQL_BODY") || status=$?
		if [ "$status" -eq 0 ]; then
			ROWS[$qn,$c]=0
			[ -z "$out" ] || ROWS[$qn,$c]=$(grep -c '' <<<"$out")
			MD5[$qn,$c]=$(LC_ALL=C sort <<<"$out" | md5sum | cut -c1-12)
			plan=$(psql_sets -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $SQL_BODY") || status=$?
		fi
		case $status in
			0) ;;
			3)
				T[$qn,$c]=timeout
				MD5[$qn,$c]=timeout
				ROWS[$qn,$c]=timeout
				TIMEOUTS=$((TIMEOUTS + 1))
				plan=$(psql_sets -c "EXPLAIN (COSTS OFF) $SQL_BODY") ;;
			*) die "Q$qn failed in configuration $c" ;;
		esac
		PLAN[$qn,$c]=$(plan_shape <<<"$plan")
	done
	# each configuration's rows against the first one's that did not time out
	REF[$qn]=
	SAME[$qn]=yes
	for c in "${CONFIGS[@]}"; do
		[ "${MD5[$qn,$c]}" != timeout ] || continue
		if [ -z "${REF[$qn]}" ]; then
			REF[$qn]=$c
		elif [ "${MD5[$qn,$c]}" != "${MD5[$qn,${REF[$qn]}]}" ]; then
			MISMATCHES=$((MISMATCHES + 1))
			SAME[$qn]="no: ${CONFIG_NAME[$c]} differs"
			log "Q$qn: the rows of configuration $c differ from those of ${REF[$qn]}"
		fi
	done
	[ -n "${REF[$qn]}" ] || SAME[$qn]="timeout"

	log "Q$qn: $RUNS rounds"
	declare -A times=()
	for ((r = 0; r < RUNS; r++)); do
		for ((j = 0; j < ${#CONFIGS[@]}; j++)); do
			c=${CONFIGS[(r + j) % ${#CONFIGS[@]}]}
			[ "${T[$qn,$c]:-}" != timeout ] || continue
			ms=$(ssb_ms "${CONFIG_SET[$c]} ${Q[$qn]}")
			if [ "$ms" = timeout ]; then
				T[$qn,$c]=timeout
				TIMEOUTS=$((TIMEOUTS + 1))
				continue
			fi
			times[$c]+="$ms "
		done
	done
	for c in "${CONFIGS[@]}"; do
		[ "${T[$qn,$c]:-}" = timeout ] || T[$qn,$c]=$(printf '%s\n' ${times[$c]} | median 1)
	done
	unset times
	log "Q$qn: $(for c in "${CONFIGS[@]}"; do printf '%s %s ms; ' "${CONFIG_NAME[$c]}" "${T[$qn,$c]}"; done)"
done

# best of configurations 1 and 2, and the ratios to it
declare -A BEST RATIO3 RATIO4
min_ms() {
	if [ "$1" = timeout ]; then echo "$2"; elif [ "$2" = timeout ]; then echo "$1"
	else awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; fi
}
for qn in "${QUERIES[@]}"; do
	BEST[$qn]=$(min_ms "${T[$qn,1]}" "${T[$qn,2]}")
	RATIO3[$qn]=$(ratio "${T[$qn,3]}" "${BEST[$qn]}" 2)
	RATIO4[$qn]=$(ratio "${T[$qn,4]}" "${BEST[$qn]}" 2)
done
# geomean VALUE...: the geometric mean, "n/a" if any is a timeout or "n/a"
geomean() {
	printf '%s\n' "$@" | awk '$1 == "timeout" || $1 == "n/a" || $1 <= 0 { bad = 1 }
		{ s += log($1); n++ } END { if (bad || n == 0) print "n/a"; else printf "%.2f\n", exp(s / n) }'
}
declare -A GEO
for c in "${CONFIGS[@]}" best r3 r4; do
	vals=()
	for qn in "${QUERIES[@]}"; do
		case $c in
			best) vals+=("${BEST[$qn]}") ;;
			r3) vals+=("${RATIO3[$qn]}") ;;
			r4) vals+=("${RATIO4[$qn]}") ;;
			*) vals+=("${T[$qn,$c]}") ;;
		esac
	done
	GEO[$c]=$(geomean "${vals[@]}")
done

# the indexes: sizes, and the amqfilter indexes' entries
INDEX_ROWS=$(q -F ' | ' <<-'SQL'
	SELECT k, pg_size_pretty(bt.bytes), pg_size_pretty(t.bytes), round(t.bytes::numeric / bt.bytes, 3),
	       t.entries, t.everywhere, round(100.0 * t.everywhere / nullif(t.entries, 0), 1) || '%',
	       p.ppr, round(t.false_positive_rate::numeric, 5), p.saturated || '/' || p.parts
	  FROM unnest(ARRAY['lo_custkey', 'lo_suppkey', 'lo_partkey', 'lo_orderdate']) WITH ORDINALITY AS u(k, n),
	       LATERAL (SELECT ('ssb_amq.lineorder_' || k || '_amq')::regclass AS amq,
	                       ('ssb_btree.lineorder_' || k || '_btree')::regclass AS btree) x,
	       LATERAL (SELECT sum(pg_relation_size(relid)) AS bytes FROM pg_partition_tree(x.btree)) bt,
	       LATERAL (SELECT * FROM amqfilter_index_info(x.amq) WHERE partition_index IS NULL) t,
	       LATERAL (SELECT min(pages_per_range)
	                       || CASE WHEN min(pages_per_range) < max(pages_per_range)
	                               THEN '-' || max(pages_per_range) ELSE '' END AS ppr,
	                       count(*) FILTER (WHERE saturated) AS saturated, count(*) AS parts
	                  FROM amqfilter_index_info(x.amq) WHERE partition_index IS NOT NULL) p
	 ORDER BY n
SQL
)

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

cell() { shown_ms "$1"; }
RESULT=$({
	results_provenance bench/ssb.sh
	echo
	echo "SF $SF: lineorder ${R[lineorder]} rows (${R[fact_mb]} MB) in 7 yearly partitions, inserted in"
	echo "order-date order; customer $CUSTOMERS, supplier $SUPPLIERS, part $PARTS, date ${R[dates]} rows;"
	echo "generated in SQL and loaded in ${LOAD_TOTAL} s, three copies of the fact and their indexes"
	echo "($(for n in "${LOAD_ORDER[@]}"; do printf '%s %s s, ' "$n" "${LOAD_S[$n]}"; done | sed 's/, $//'))."
	echo "One core per query, JIT off, statement_timeout ${TIMEOUT_S} s. Configurations: 1 no index on"
	echo "the fact; 2 btrees on lo_custkey, lo_suppkey, lo_partkey, lo_orderdate; 3 amqfilter"
	echo "indexes on them${AMQ_WITH:+ (WITH ($AMQ_WITH))}; 4 the same with amqfilter.join_filter on; 5 no index, join"
	echo "filter on. Time: ms $([ "$TIMER" = client ] && echo "as psql's \\timing sees it" \
		|| echo "of EXPLAIN (ANALYZE, TIMING OFF) execution"), medians of $RUNS interleaved"
	echo "rounds. best: the better of 1 and 2; 3/best, 4/best below 1: faster than PostgreSQL's best."
	echo
	echo "| query | rows | 1 plain | 2 btree | 3 amq | 4 amq+jf | 5 plain+jf | 3/best | 4/best | same rows |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	for qn in "${QUERIES[@]}"; do
		ref=${REF[$qn]:-1}
		echo "| Q$qn | ${ROWS[$qn,$ref]} | $(cell "${T[$qn,1]}") | $(cell "${T[$qn,2]}") |" \
			"$(cell "${T[$qn,3]}") | $(cell "${T[$qn,4]}") | $(cell "${T[$qn,5]}") |" \
			"${RATIO3[$qn]} | ${RATIO4[$qn]} | ${SAME[$qn]}${REF[$qn]:+ (md5 ${MD5[$qn,$ref]})} |"
	done
	echo "| geomean | | ${GEO[1]} | ${GEO[2]} | ${GEO[3]} | ${GEO[4]} | ${GEO[5]} | ${GEO[r3]} | ${GEO[r4]} | |"
	echo
	echo "Geomean of the better of 1 and 2: ${GEO[best]} ms. Plans (EXPLAIN ANALYZE): the joins from the"
	echo "top down (HJ hash, NL nested loop, MJ merge), the fact's indexes used (ix), a dimension's"
	echo "primary key used (pk), the fact's keys a runtime join filter tests (rf), scans of the"
	echo "fact's partitions an amqfilter index skipped (skipped: of the scans in the plan, or of"
	echo "those a nested loop's rescans probed), blocks read in the ranges the index returned"
	echo "(ranges: of the partitions' blocks), runtime filters that stopped testing."
	echo
	echo "| query | 1 plain | 2 btree | 3 amq | 4 amq+jf | 5 plain+jf |"
	echo "|---|---|---|---|---|---|"
	for qn in "${QUERIES[@]}"; do
		echo "| Q$qn | ${PLAN[$qn,1]} | ${PLAN[$qn,2]} | ${PLAN[$qn,3]} | ${PLAN[$qn,4]} |" \
			"${PLAN[$qn,5]} |"
	done
	echo
	echo "Indexes on lineorder (all 7 partitions): btree against amqfilter, and"
	echo "amqfilter_index_info's totals (entries: a value and a block range each, or a span's"
	echo "end; everywhere: entries of values spread over more than an eighth of a partition,"
	echo "whose lookup reads the partition;"
	echo "pages per range of the partitions' indexes; fpr now: the mean of the partitions' rates"
	echo "from their load; saturated: partitions' indexes with a page that filled up)."
	echo
	echo "| column | btree | amqfilter | amqfilter/btree | entries | everywhere | share | pages per range | fpr now | saturated |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	while IFS= read -r line; do
		echo "| $line |"
	done <<<"$INDEX_ROWS"
	echo
	echo "- Timeouts: $TIMEOUTS. Results differing between configurations: $MISMATCHES."
})
printf '%s\n' "$RESULT"
results_replace_section "$RESULTS_FILE" "$SECTION" <<<"$RESULT"
log "results in $RESULTS_FILE"
[ "$TIMEOUTS" -eq 0 ] && [ "$MISMATCHES" -eq 0 ] \
	|| die "$TIMEOUTS timeouts, $MISMATCHES queries whose rows differ between configurations"
