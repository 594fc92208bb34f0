-- db1's own PostgreSQL: the warehouse side of the business. Run once, when the data directory is
-- made. The node serves it as db1/postgres, connected to `inventory`.

CREATE DATABASE inventory;
CREATE DATABASE purchasing;

\connect inventory

CREATE TABLE warehouses (
    id integer PRIMARY KEY,
    city text NOT NULL,
    opened date NOT NULL
);

CREATE TABLE products (
    id integer PRIMARY KEY,
    sku text NOT NULL UNIQUE,
    name text NOT NULL,
    unit_price numeric(10, 2) NOT NULL
);

CREATE TABLE stock (
    warehouse_id integer NOT NULL REFERENCES warehouses (id),
    product_id integer NOT NULL REFERENCES products (id),
    quantity integer NOT NULL CHECK (quantity >= 0),
    PRIMARY KEY (warehouse_id, product_id)
);

INSERT INTO warehouses VALUES (1, 'Lyon', '2019-03-01'), (2, 'Porto', '2021-09-15');
INSERT INTO products VALUES
    (1, 'ANV-10', 'anvil', 89.00),
    (2, 'ROP-25', 'rope, 25 m', 14.50),
    (3, 'LAN-01', 'lantern', 22.90);
INSERT INTO stock VALUES (1, 1, 12), (1, 2, 140), (2, 2, 60), (2, 3, 31);

\connect purchasing

CREATE TABLE suppliers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    country text NOT NULL
);

CREATE TABLE purchase_orders (
    id integer PRIMARY KEY,
    supplier_id integer NOT NULL REFERENCES suppliers (id),
    ordered_on date NOT NULL,
    total numeric(12, 2) NOT NULL
);

INSERT INTO suppliers VALUES (1, 'Forges de Bourgogne', 'FR'), (2, 'Cordoaria Norte', 'PT');
INSERT INTO purchase_orders VALUES (1, 1, '2024-02-12', 1780.00), (2, 2, '2024-03-04', 652.50);
