<?php
// The catalogue's data: 500 products made from a seeded sequence, the same on every
// request and every server (what a repository would load from a database).

namespace App;

final class Catalogue
{
    private const CATEGORIES = ['kitchen', 'garden', 'office', 'workshop', 'bathroom'];
    private const WORDS = ['steel', 'oak', 'linen', 'copper', 'stone', 'glass', 'wool',
        'cedar', 'brass', 'clay', 'slate', 'maple', 'cotton', 'iron', 'birch'];
    private const ITEMS = ['kettle', 'lamp', 'chair', 'shelf', 'bowl', 'rake', 'desk',
        'hook', 'basket', 'clamp', 'mirror', 'stool', 'tray', 'vase', 'crate'];

    /** @var list<array{sku: string, name: string, category: string, cents: int, stock: int, tags: list<string>}> */
    private array $products = [];

    public function __construct()
    {
        $seed = 7;
        for ($i = 1; $i <= 500; $i++) {
            $seed = ($seed * 1103515245 + 12345) & 0x7fffffff;
            $this->products[] = [
                'sku' => sprintf('SKU-%04d', $i),
                'name' => self::WORDS[$seed % 15] . ' ' . self::ITEMS[($seed >> 8) % 15],
                'category' => self::CATEGORIES[$i % 5],
                'cents' => 199 + $seed % 25000,
                'stock' => ($seed >> 4) % 7 === 0 ? 0 : ($seed >> 5) % 120,
                'tags' => [self::WORDS[($seed >> 3) % 15], self::CATEGORIES[($seed >> 6) % 5]],
            ];
        }
    }

    /** @return list<string> */
    public function categories(): array
    {
        return self::CATEGORIES;
    }

    public function count(): int
    {
        return \count($this->products);
    }

    /** @return list<array{sku: string, name: string, category: string, cents: int, stock: int, tags: list<string>}> */
    public function page(int $page, int $size): array
    {
        return \array_slice($this->products, ($page - 1) * $size, $size);
    }

    public function stockValueCents(array $products): int
    {
        return array_sum(array_map(static fn (array $p): int => $p['cents'] * $p['stock'], $products));
    }

    public function find(string $sku): ?array
    {
        foreach ($this->products as $product) {
            if ($product['sku'] === $sku) {
                return $product;
            }
        }
        return null;
    }
}
