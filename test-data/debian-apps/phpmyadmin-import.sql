-- Uploaded through phpMyAdmin's import form by server/tests/debian_apps.rs: rows for the
-- table created through the form, and a table of its own.
INSERT INTO notes (body) VALUES ('imported by upload: ünïcödé');
INSERT INTO notes (body) VALUES ('second row <b>&amp;</b>');
CREATE TABLE imported (k VARCHAR(20) PRIMARY KEY, v TEXT) DEFAULT CHARSET=utf8mb4;
INSERT INTO imported VALUES ('k1', 'from the uploaded file');
UPDATE notes SET body = body WHERE id = 1;
