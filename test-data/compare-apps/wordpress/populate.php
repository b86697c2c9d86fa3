<?php
// Installs and fills the comparison harness's WordPress site through WordPress's own PHP
// API, once, from the command line (benches/src/compare/apps/wordpress.rs):
//   ferrophp php-cli populate.php WP_ROOT
// The site made by test-data/databases/make-wordpress.sh, an empty database. What it
// writes is the same whichever server later serves the site: WordPress's defaults
// (the "Hello world!" post, dated first, and the sample page), pretty permalinks (/%postname%/), 20 posts
// in 4 categories with 5 comments each, the post the `wordpress-post` workload reads
// (slug a-post-with-comments, newest of all, 24 comments of which 8 are replies), and
// 3 pages. Dates are fixed and text is generated from a seeded sequence, so every run
// builds the same site.

if ($argc < 2) {
    fwrite(STDERR, "usage: populate.php WP_ROOT\n");
    exit(2);
}
$root = rtrim($argv[1], '/');
// wp-config.php takes the site's address from the Host header of each request; here
// there is none, and nothing written below depends on it.
$_SERVER['HTTP_HOST'] = 'localhost';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['SERVER_NAME'] = 'localhost';
$_SERVER['SERVER_PORT'] = '80';
define('WP_INSTALLING', true);
require $root . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

if (is_blog_installed()) {
    fwrite(STDERR, "populate.php: WordPress is already installed in this database\n");
    exit(1);
}
$installed = wp_install('ferrophp bench', 'admin', 'admin@example.invalid', false, '', 'bench admin password, never used');
$admin = (int) $installed['user_id'];

// WordPress's own first post is dated at install time; dated before the others instead,
// the front page lists the same 10 posts on every run.
wp_update_post(['ID' => 1, 'post_date' => '2024-01-01 08:00:00', 'post_date_gmt' => '2024-01-01 08:00:00']);

global $wp_rewrite;
$wp_rewrite->set_permalink_structure('/%postname%/');
$wp_rewrite->flush_rules(false);
update_option('blogdescription', 'A WordPress site for the comparison harness');

// A small deterministic generator (the same text on every run).
$seed = 42;
$next = static function () use (&$seed): int {
    $seed = ($seed * 1103515245 + 12345) & 0x7fffffff;
    return $seed;
};
$words = explode(' ', 'server thread request worker cache page render engine opcode module '
    . 'socket kernel queue latency memory pool static script template query index table '
    . 'column row session cookie header status stream buffer response client database');
$sentence = static function (int $n) use ($next, $words): string {
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        $out[] = $words[$next() % count($words)];
    }
    return ucfirst(implode(' ', $out)) . '.';
};
$paragraphs = static function (int $n) use ($sentence, $next): string {
    $html = '';
    for ($i = 0; $i < $n; $i++) {
        $text = '';
        for ($s = 0; $s < 4 + $next() % 4; $s++) {
            $text .= $sentence(8 + $next() % 10) . ' ';
        }
        $html .= "<!-- wp:paragraph -->\n<p>" . trim($text) . "</p>\n<!-- /wp:paragraph -->\n\n";
    }
    return $html;
};

$categories = [];
foreach (['Engines', 'Servers', 'Caches', 'Databases'] as $name) {
    $categories[] = (int) wp_insert_term($name, 'category')['term_id'];
}
$check = static function ($id, string $what): int {
    if (is_wp_error($id) || !$id) {
        fwrite(STDERR, "populate.php: $what failed: " . (is_wp_error($id) ? $id->get_error_message() : 'no id') . "\n");
        exit(1);
    }
    return (int) $id;
};
$comment = static function (int $post, int $n, string $date, int $parent = 0) use ($sentence, $check): int {
    return $check(wp_insert_comment([
        'comment_post_ID' => $post,
        'comment_author' => "Reader $n",
        'comment_author_email' => "reader$n@example.invalid",
        'comment_author_url' => '',
        'comment_content' => "Comment $n: " . $sentence(12) . ' ' . $sentence(9),
        'comment_approved' => 1,
        'comment_parent' => $parent,
        'comment_date' => $date,
        'comment_date_gmt' => $date,
    ]), "comment $n on post $post");
};

for ($i = 1; $i <= 20; $i++) {
    $date = sprintf('2024-02-%02d 10:00:00', $i);
    $post = $check(wp_insert_post([
        'post_title' => sprintf('Bench post %02d: %s', $i, rtrim($sentence(4), '.')),
        'post_name' => sprintf('bench-post-%02d', $i),
        'post_content' => $paragraphs(5),
        'post_excerpt' => '',
        'post_status' => 'publish',
        'post_author' => $admin,
        'post_date' => $date,
        'post_date_gmt' => $date,
        'post_category' => [$categories[$i % 4]],
        'tags_input' => [$words[$i % count($words)], $words[($i * 7) % count($words)]],
    ], true), "post $i");
    for ($c = 1; $c <= 5; $c++) {
        $comment($post, $i * 100 + $c, sprintf('2024-02-%02d 12:%02d:00', $i, $c));
    }
}

$date = '2024-03-01 09:00:00';
$post = $check(wp_insert_post([
    'post_title' => 'A post with comments',
    'post_name' => 'a-post-with-comments',
    'post_content' => $paragraphs(8),
    'post_status' => 'publish',
    'post_author' => $admin,
    'post_date' => $date,
    'post_date_gmt' => $date,
    'post_category' => [$categories[0]],
    'tags_input' => ['benchmark', 'comments'],
], true), 'the post with comments');
$top = [];
for ($c = 1; $c <= 16; $c++) {
    $top[] = $comment($post, $c, sprintf('2024-03-01 10:%02d:00', $c));
}
for ($c = 17; $c <= 24; $c++) {
    $comment($post, $c, sprintf('2024-03-01 11:%02d:00', $c), $top[$c % 16]);
}

foreach (['About', 'Contact', 'Shipping'] as $n => $title) {
    $check(wp_insert_post([
        'post_title' => $title,
        'post_name' => strtolower($title),
        'post_content' => $paragraphs(3),
        'post_status' => 'publish',
        'post_type' => 'page',
        'post_author' => $admin,
        'menu_order' => $n,
    ], true), "page $title");
}
echo "populated\n";
