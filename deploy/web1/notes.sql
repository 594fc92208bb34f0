-- The team's notes, served by web1 as the mesh seat mesh/notes (SQLite). deploy/bootstrap.sh
-- writes them once into the web1-notes volume.
BEGIN;
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT);
INSERT INTO notes (title, body) VALUES
    ('on-call', 'Page the db team for db1 (inventory) and db2 (customers).'),
    ('registry', 'The registry is the compose service "registry"; back up its volume nightly.');
COMMIT;
