<?php

namespace App\Controller;

use App\Catalogue;
use Symfony\Bundle\FrameworkBundle\Controller\AbstractController;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Exception\NotFoundHttpException;

final class CatalogueController extends AbstractController
{
    public function __construct(private Catalogue $catalogue)
    {
    }

    public function list(Request $request, int $page): Response
    {
        $products = $this->catalogue->page($page, 40);
        if ($products === []) {
            throw new NotFoundHttpException("no page $page");
        }
        return $this->render('catalogue.html.twig', [
            'page' => $page,
            'pages' => intdiv($this->catalogue->count() + 39, 40),
            'products' => $products,
            'total' => $this->catalogue->count(),
            'stock_value' => $this->catalogue->stockValueCents($products),
            'categories' => $this->catalogue->categories(),
            'query' => (string) $request->query->get('q', ''),
        ]);
    }

    public function product(string $sku): Response
    {
        $product = $this->catalogue->find($sku) ?? throw new NotFoundHttpException($sku);
        return $this->json($product);
    }
}
