import { createUsherClient } from '@usher/client';

const usher = createUsherClient({ profile: 'b', baseUrl: 'https://usher.example.com', session: 'token' });

const signedIn = await usher.signIn({ email: 'ada@example.com', password: 'correct horse battery' });
if (!signedIn.ok) throw new Error(`${signedIn.error}: ${signedIn.message}`);

const created = await usher.POST('/api/products', { body: { name: 'Lamp', price: 2500 } });
if (!created.ok) throw new Error(created.error);
const product = created.data; // { id: bigint, name: string, price: number, ownerId: bigint, … }

const reviews = await usher.GET('/api/products/{id}/reviews', {
  params: { path: { id: product.id }, query: { size: 10, sort: '-rating' } },
});
if (reviews.ok) {
  console.log(
    reviews.data.map((review) => review.rating),
    reviews.page.total,
    reviews.page.next?.page,
  );
} else if (reviews.status === 404) {
  console.log('no such product', reviews.error); // reviews.error: 'NOT_FOUND' | 'USER_NOT_FOUND'
}
