-- db2's own PostgreSQL: the customer side of the business. Run once, when the data directory is
-- made. The node serves it as db2/postgres, connected to `customers`.

CREATE DATABASE customers;
CREATE DATABASE analytics;

\connect customers

CREATE TABLE customers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    country text NOT NULL,
    since date NOT NULL
);

CREATE TABLE orders (
    id integer PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES customers (id),
    placed_at timestamptz NOT NULL,
    total numeric(12, 2) NOT NULL
);

INSERT INTO customers VALUES
    (1, 'Ada', 'UK', '2022-01-10'),
    (2, 'Grace', 'US', '2022-06-02'),
    (3, 'Linus', 'FI', '2023-11-20');
INSERT INTO orders VALUES
    (1, 1, '2024-04-01 09:12+00', 99.50),
    (2, 2, '2024-04-03 17:40+00', 12.00),
    (3, 2, '2024-04-09 08:05+00', 40.25);

\connect analytics

CREATE TABLE page_views (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path text NOT NULL,
    viewed_at timestamptz NOT NULL
);

CREATE VIEW daily_views AS
    SELECT date_trunc('day', viewed_at) AS day, count(*) AS views
    FROM page_views
    GROUP BY 1;

INSERT INTO page_views (path, viewed_at) VALUES
    ('/', '2024-04-01 10:00+00'),
    ('/pricing', '2024-04-01 10:02+00'),
    ('/', '2024-04-02 14:30+00');
