// The demo catalogue `npm run seed` creates. Plates and (hotel, city) / (hotel, room type) names are
// the natural keys that make seeding twice reuse what the first run created.

export const OPERATOR_ID = 1;
export const CUSTOMER_ID = 1001;
export const STOCK_NIGHTS = 90;

export interface DemoCar {
  plate: string;
  model: string;
  city: string;
  hostId: number;
  dailyPrice: number;
  depositAmount: number;
}

export interface DemoRoomType {
  name: string;
  depositAmount: number;
  /** Rooms sellable on each of the next STOCK_NIGHTS nights. */
  sellable: number;
  /** For the rate-plan hook: the price a night of this room type should carry. */
  nightlyPrice: number;
}

export interface DemoHotel {
  name: string;
  city: string;
  timezone: string;
  checkInTime: string;
  roomTypes: DemoRoomType[];
}

export const CARS: DemoCar[] = [
  { plate: '29A-101.01', model: 'Toyota Vios', city: 'Hanoi', hostId: 101, dailyPrice: 700_000, depositAmount: 2_000_000 },
  { plate: '29A-101.02', model: 'Mazda CX-5', city: 'Hanoi', hostId: 101, dailyPrice: 1_200_000, depositAmount: 3_000_000 },
  { plate: '30G-102.01', model: 'VinFast VF 8', city: 'Hanoi', hostId: 102, dailyPrice: 1_500_000, depositAmount: 5_000_000 },
  { plate: '43A-103.01', model: 'Kia Morning', city: 'Da Nang', hostId: 103, dailyPrice: 500_000, depositAmount: 1_500_000 },
  { plate: '43A-103.02', model: 'Ford Ranger', city: 'Da Nang', hostId: 103, dailyPrice: 1_100_000, depositAmount: 3_000_000 },
  { plate: '51H-102.02', model: 'Honda City', city: 'Ho Chi Minh City', hostId: 102, dailyPrice: 800_000, depositAmount: 2_000_000 },
  { plate: '51H-103.03', model: 'Toyota Innova', city: 'Ho Chi Minh City', hostId: 103, dailyPrice: 1_000_000, depositAmount: 2_500_000 },
];

export const HOTELS: DemoHotel[] = [
  {
    name: 'Lotus Riverside', city: 'Hanoi', timezone: 'Asia/Ho_Chi_Minh', checkInTime: '14:00',
    roomTypes: [
      { name: 'Standard Double', depositAmount: 500_000, sellable: 10, nightlyPrice: 1_200_000 },
      { name: 'Family Suite', depositAmount: 1_200_000, sellable: 3, nightlyPrice: 2_800_000 },
    ],
  },
  {
    name: 'Son Tra Beach Resort', city: 'Da Nang', timezone: 'Asia/Ho_Chi_Minh', checkInTime: '15:00',
    roomTypes: [
      { name: 'Ocean View King', depositAmount: 800_000, sellable: 8, nightlyPrice: 2_000_000 },
      { name: 'Garden Twin', depositAmount: 600_000, sellable: 12, nightlyPrice: 1_500_000 },
    ],
  },
];
